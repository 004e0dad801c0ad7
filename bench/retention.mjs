// `npm run bench -- --only retention`: does retention level the store off under steady traffic, and how long does
// pruning hold the event loop? A pinned hookgate with the bench's config (default retention) takes /hooks/wake at
// SOAK_RATE (default 200/s) and /hooks/agent at SOAK_AGENT_RATE (default 20/s), open loop, for SOAK_SECONDS (default
// 3600). Every SOAK_SAMPLE_SECONDS (default 10): the store's files (database, WAL, shared memory), the rows written so
// far, the server's RSS and the database's free pages (what the last prune freed and the load has not reused yet: the
// file grows only once they are used up, so a pass that frees less than the load writes shows here first).
//
// Retention is counted in days, so a soak of an hour would prune nothing of its own: SOAK_FILL=N first fills the
// store with N requests' rows spread over the last SOAK_FILL_DAYS (default 7.2) days (bench/fill-store.mjs), so the
// oldest are past the 7-day retention: the prune at start deletes those, and every later prune (each 10 minutes) the
// next 10 minutes' worth. The load starts as soon as the server listens, which is when its first prune runs.
// SOAK_STEADY=1 (with SOAK_FILL unset) fills the steady state instead: the rows the soak's own rates write, over one
// prune period before the 7-day cut-off and the soak's length after it, so each prune deletes what the last 10 minutes
// of load wrote and a store whose retention works stops growing after the first prune. It is shaped as this load
// leaves a store (measured here at 900 + 100 req/s, heartbeat every 30m, wakes and runs `now`): a heartbeat of the
// main session every SOAK_HEARTBEAT_EVERY (default 254) requests, its prompt carrying the session's history,
// SOAK_BLOCK (default 1.53) received records per committed block, and its rows laid out in pages as the load lays
// out its own (bench/compare-pages.mjs measures it).
//
// Stalls: the generator's slowest answer in each second (both loads) is the longest the event loop was held (plus
// the answer's own time); the table gives the longest overall and in the seconds after each prune (at start, then
// every 600 s).
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fillStore } from './fill-store.mjs';
import { openLoopRounds } from './latency.mjs';
import { peakRssMiB, rssMiB, startHookgate, stopHookgate, TOKEN } from './pinned.mjs';

const MiB = 1024 * 1024;
const PRUNE_EVERY_S = 600;
/** The bench config's retention (the defaults: hooks.receivedRetentionDays and hooks.runRetentionDays). */
const RETENTION_DAYS = 7;
export const RETENTION_TARGETS = { lastQuarterGrowthPct: 0.1, pruneStallMs: 50, stepHeldMs: 20 };

const size = (p) => {
  try {
    return statSync(p).size;
  } catch {
    return 0;
  }
};

export async function retentionBench(o) {
  const seconds = Number(process.env.SOAK_SECONDS ?? 3600);
  const rate = Number(process.env.SOAK_RATE ?? 200);
  const agentRate = Number(process.env.SOAK_AGENT_RATE ?? 20);
  const every = Number(process.env.SOAK_SAMPLE_SECONDS ?? 10);
  const fill = Number(process.env.SOAK_FILL ?? 0);
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-soak-'));
  try {
    const steady = fill === 0 && process.env.SOAK_STEADY === '1';
    const span = seconds + PRUNE_EVERY_S; // the steady fill: one prune period before the cut-off, the soak after it
    const filled = steady
      ? await fillStore(dir, Math.round((rate + agentRate) * span), {
          days: span / 86_400,
          agentEvery: agentRate > 0 ? Math.max(1, Math.round((rate + agentRate) / agentRate)) : 1e12,
          heartbeatEvery: Number(process.env.SOAK_HEARTBEAT_EVERY ?? 254),
          block: Number(process.env.SOAK_BLOCK ?? 1.53),
          wakeMode: 'now',
          end: Date.now() - RETENTION_DAYS * 86_400_000 + seconds * 1000,
        })
      : fill > 0
        ? await fillStore(dir, fill, { days: Number(process.env.SOAK_FILL_DAYS ?? 7.2) })
        : undefined;
    // The fill's pages go to the disk before the server starts: otherwise the server's first fsync of the database
    // file waits for hundreds of MiB the fill left dirty in the page cache, which a service that ran for a week has not.
    if (filled) {
      const fd = openSync(join(dir, 'hookgate.db'), 'r+');
      fsyncSync(fd);
      closeSync(fd);
    }
    // The product's heartbeat (not the ingress benches' `off`), and wakes and runs asking for one (`now`, the default):
    // the heartbeats consume the events, as in service. Pending events are never deleted, so with no heartbeat the
    // wakes' events would pile up and the store grow by design, whatever retention does.
    const hg = await startHookgate(o, dir, {}, { heartbeat: { every: '30m' } });
    // The server's own account of each pass over finished work (its info line): rows, steps, duration, longest step.
    const passes = [];
    createInterface({ input: hg.child.stdout }).on('line', (line) => {
      if (!line.includes('pruned finished work')) return;
      try {
        const m = JSON.parse(line);
        passes.push({ t: Math.round((performance.now() - t0) / 1000), ...pick(m) });
      } catch {
        /* not a log line */
      }
    });
    const db = join(dir, 'hookgate.db');
    const rows = hg.db.prepare(
      // MAX and MIN in separate subqueries: together in one they scan the whole table (SQLite's min/max shortcut
      // takes one of them alone), a read of seconds on a grown store that kept the WAL from starting over.
      `SELECT COALESCE((SELECT MAX(seq) FROM received_log) - (SELECT MIN(seq) FROM received_log) + 1, 0) AS received_blocks,
              (SELECT COALESCE(MAX(seq), 0) FROM system_events) AS events, (SELECT COALESCE(MAX(seq), 0) FROM runs) AS runs,
              (SELECT COUNT(*) FROM system_events WHERE consumed_at IS NULL) AS pending_events,
              (SELECT freelist_count FROM pragma_freelist_count()) * (SELECT page_size FROM pragma_page_size()) AS free_bytes`,
    );
    const t0 = performance.now();
    const samples = [];
    const sample = () =>
      samples.push({
        t: Math.round((performance.now() - t0) / 1000),
        storeMiB: (size(db) + size(`${db}-wal`) + size(`${db}-shm`)) / MiB,
        walMiB: size(`${db}-wal`) / MiB,
        // The WAL's high-water mark so far, from its index (-shm: 32 KiB per 4,096 frames of 4 KiB pages), which
        // never shrinks: a WAL that grew and was cut back between two samples still shows here.
        walPeakMiB: ((size(`${db}-shm`) / 32768) * 4096 * 4120) / MiB,
        rssMiB: rssMiB(hg.child.pid),
        ...rows.get(),
      });
    sample();
    const timer = setInterval(sample, every * 1000);
    try {
      const load = (kind, r) => ({ url: `${hg.url}/hooks/${kind}`, kind, rate: r });
      const [wake, agent] = await openLoopRounds(
        o,
        [load('wake', rate), ...(agentRate > 0 ? [load('agent', agentRate)] : [])],
        { seconds, token: TOKEN, connections: 20, warmup: false, wakeMode: 'now' },
      );
      clearInterval(timer);
      sample();
      const perSecond = wake.perSecondMax.map((w, i) => Math.max(w, agent?.perSecondMax[i] ?? 0));
      const prunes = [];
      for (let at = 0; at < perSecond.length; at += PRUNE_EVERY_S)
        prunes.push({ at, maxMs: Math.max(0, ...perSecond.slice(at, at + 5)) });
      // The seconds no pass over finished work touched (nor the start): the machine's own stalls, to compare with.
      const busy = (i) =>
        i < 5 || passes.some((p) => i >= p.t - Math.ceil(p.ms / 1000) - 1 && i <= p.t + 5) || i % PRUNE_EVERY_S < 5;
      const quietMs = Math.max(0, ...perSecond.filter((_, i) => !busy(i)));
      const q = Math.max(1, Math.floor(samples.length / 4));
      const growth = (a, b) => (samples[b].storeMiB - samples[a].storeMiB) / Math.max(1, samples[b].t - samples[a].t);
      // From the second sample: the first fills the WAL to its working size once.
      const first = growth(Math.min(1, samples.length - 1), Math.min(samples.length - 1, q + 1));
      const last = growth(samples.length - 1 - q, samples.length - 1);
      const end = samples.at(-1).storeMiB;
      const lastQuarterPct = (100 * (end - samples[samples.length - 1 - q].storeMiB)) / end;
      return {
        seconds,
        rate,
        agentRate,
        filled,
        samples,
        prunes,
        passes,
        quietMs,
        wake: summary(wake),
        agent: agent ? summary(agent) : undefined,
        longestMs: Math.max(0, ...perSecond),
        growthMiBPerMin: { firstQuarter: first * 60, lastQuarter: last * 60 },
        peakRssMiB: peakRssMiB(hg.child.pid),
        targets: [
          {
            // Of the store's size, not of the first quarter's growth: on a steady fill the first quarter grows by
            // next to nothing, and a ratio of two such figures says nothing (0.01 against 0.00 MiB/min read 3.4×).
            target: `store growth in the last quarter ≤ ${RETENTION_TARGETS.lastQuarterGrowthPct} % of its size (levels off)`,
            value: lastQuarterPct,
            ok: lastQuarterPct <= RETENTION_TARGETS.lastQuarterGrowthPct,
          },
          {
            target: `longest a prune step's statements held the writer ≤ ${RETENTION_TARGETS.stepHeldMs} ms`,
            value: Math.max(0, ...passes.map((p) => p.longestHeldMs ?? Number.POSITIVE_INFINITY)),
            ok: passes.length > 0 && passes.every((p) => p.longestHeldMs <= RETENTION_TARGETS.stepHeldMs),
          },
          {
            target: `longest answer in the 5 s after each prune ≤ ${RETENTION_TARGETS.pruneStallMs} ms`,
            value: Math.max(0, ...prunes.map((p) => p.maxMs)),
            ok: prunes.every((p) => p.maxMs <= RETENTION_TARGETS.pruneStallMs),
          },
        ],
      };
    } finally {
      clearInterval(timer);
      await stopHookgate(hg);
    }
  } finally {
    // SOAK_KEEP=1: the store stays for inspection (its directory is on stderr).
    if (process.env.SOAK_KEEP === '1') process.stderr.write(`soak store kept in ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

const pick = (m) => ({
  runs: m.runs,
  deliveries: m.deliveries,
  events: m.events,
  messages: m.messages,
  steps: m.steps,
  ms: m.ms,
  longestStepMs: m.longestStepMs,
  longestHeldMs: m.longestHeldMs,
});

const summary = (r) => ({
  rate: r.rate,
  answered: r.answered,
  non2xx: r.non2xx + r.errors + r.unanswered,
  p50: r.p50,
  p99: r.p99,
  p999: r.p999,
  max: r.max,
  generatorLateP99: r.generatorLateP99,
  generatorLateMax: r.generatorLateMax,
});

export function retentionTable(o, s) {
  const f = (n, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const lines = [
    `hookgate retention soak: /hooks/wake ${s.rate}/s + /hooks/agent ${s.agentRate}/s for ${s.seconds} s, open loop (pinned: server on CPU ${o.serverCpu}, load on CPU ${o.loadCpu}); node ${process.version}, ${new Date().toISOString()}`,
    s.filled ? `prefilled: ${JSON.stringify(s.filled)}` : 'no prefill: nothing is old enough for retention to prune',
    '',
    '| t s | store MiB | WAL MiB | RSS MiB | received blocks | events written | events pending | runs written | WAL high-water MiB (≤) | free pages MiB |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...s.samples.map(
      (x) =>
        `| ${x.t} | ${f(x.storeMiB)} | ${f(x.walMiB)} | ${f(x.rssMiB)} | ${x.received_blocks} | ${x.events} | ${x.pending_events} | ${x.runs} | ${f(x.walPeakMiB)} | ${f(x.free_bytes / MiB)} |`,
    ),
    '',
    `store growth: ${f(s.growthMiBPerMin.firstQuarter, 2)} MiB/min in the first quarter, ${f(s.growthMiBPerMin.lastQuarter, 2)} MiB/min in the last`,
    `wake: p50 ${f(s.wake.p50, 2)} ms, p99 ${f(s.wake.p99, 2)}, p99.9 ${f(s.wake.p999, 2)}, max ${f(s.wake.max, 2)}, non-2xx ${s.wake.non2xx}${s.agent ? `; agent: p99 ${f(s.agent.p99, 2)} ms, max ${f(s.agent.max, 2)}, non-2xx ${s.agent.non2xx}` : ''}`,
    // A send the generator itself made late (its core busy) counts in the answer times too: this says how much.
    `the generator's own lateness in sending: p99 ${f(s.wake.generatorLateP99, 2)} / ${f(s.agent?.generatorLateP99, 2)} ms, max ${f(s.wake.generatorLateMax, 2)} / ${f(s.agent?.generatorLateMax, 2)} ms (wake / agent)`,
    `longest answer in any second: ${f(s.longestMs, 1)} ms; in the 5 s after each prune: ${s.prunes.map((p) => `t=${p.at}s ${f(p.maxMs, 1)} ms`).join(', ')}`,
    `longest answer in the seconds no prune touched (the machine's own stalls): ${f(s.quietMs, 1)} ms`,
    `passes over finished work (the server's log): ${s.passes.map((p) => `t=${p.t}s ${p.runs} runs, ${p.deliveries} deliveries, ${p.events} events, ${p.messages} turns in ${p.steps} steps, ${p.ms} ms, longest step ${p.longestStepMs} ms (its statements held the writer ${p.longestHeldMs} ms)`).join('; ') || 'none logged'}`,
    `peak RSS ${f(s.peakRssMiB)} MiB`,
    '',
    '| target | measured | met |',
    '|---|---:|:---:|',
    ...s.targets.map((v) => `| ${v.target} | ${f(v.value, 2)} | ${v.ok ? 'yes' : 'NO'} |`),
  ];
  return lines.join('\n');
}
