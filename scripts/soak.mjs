#!/usr/bin/env node
// npm run soak: the long versions of the reliability suite (test/reliability/), against the built server on loopback.
//   1. kill -9 trials under load: --trials N (10) rounds of 8 clients, each killed after --kill-after N (2000) answers;
//   2. fuzz: --requests N (10⁶) mutated requests, then a valid wake must still be accepted;
//   3. flood: --addresses N (10⁵) distinct client addresses (x-forwarded-for, 127.0.0.1 trusted), every 4th with the
//      right token, the rest wrong;
//   4. route hijack: --hijack-trials N (5) trials of 20 requests asking for attacker recipients (directly and through a
//      mapping's templated `to`), then a wake; counts heartbeat replies that reached an attacker (must be 0).
//   5. connection fairness: 20 addresses (127.0.0.10-29) hold their share of idle and half-sent connections, reopening
//      what is closed, while a client from 127.0.0.50 sends 50 wakes: each must be answered 200.
// RSS, WAL and store size are sampled every 200 ms. Prints one table; exits 1 if anything was lost, duplicated,
// answered 5xx or crashed. Runs with tsx (the npm script adds it) to share the suite's TypeScript helpers.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fairnessProbe, loopbackAddresses } from '../test/support/conn-fairness.ts';
import { contractViolation, fuzzRequest, prng, send } from '../test/support/fuzz.ts';
import { killUnderLoad } from '../test/support/kill-load.ts';
import { startHookgate, TOKEN } from '../test/support/server.ts';
import { RELIABILITY_CONFIG } from '../test/reliability/config.ts';
import { hijackConfig, probeRouteHijack, startHijackDiscord } from '../test/support/route-hijack.ts';

const { values: args } = parseArgs({
  options: {
    trials: { type: 'string', default: '10' },
    'kill-after': { type: 'string', default: '2000' },
    requests: { type: 'string', default: '1000000' },
    addresses: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '32' },
    seed: { type: 'string', default: '12' },
    'max-minutes': { type: 'string', default: '60' },
    'hijack-trials': { type: 'string', default: '5' },
  },
});
const num = (k) => {
  const n = Number(args[k]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${k} must be a whole number`);
  return n;
};
// A time bound per phase as well as the counts: a slow machine stops early and the table says how far it got.
const deadline = Date.now() + num('max-minutes') * 60_000;
const phaseDeadline = (share) => Date.now() + (deadline - Date.now()) * share;

const MiB = 1024 * 1024;
const sizeOf = (p) => {
  try {
    return statSync(p).size;
  } catch {
    return 0;
  }
};
const rssOf = (pid) => {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
};

/** Samples the process's RSS and the store files until stopped; peaks survive restarts (same dir). */
function sampler(hg) {
  const db = join(hg.dir, 'data/hookgate.db');
  const peak = { rss: 0, wal: 0, store: 0 };
  const timer = setInterval(() => {
    if (hg.proc.exitCode === null && hg.proc.signalCode === null) peak.rss = Math.max(peak.rss, rssOf(hg.proc.pid));
    const wal = sizeOf(`${db}-wal`);
    peak.wal = Math.max(peak.wal, wal);
    peak.store = Math.max(peak.store, sizeOf(db) + wal + sizeOf(`${db}-shm`));
  }, 200);
  return { peak, stop: () => clearInterval(timer) };
}

async function pool(total, concurrency, until, one) {
  let next = 0;
  const worker = async () => {
    while (next < total && Date.now() < until) await one(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return Math.min(next, total);
}

const rows = [];
const failures = [];
const concurrency = num('concurrency');

// 1. kill -9 trials
{
  const hg = await startHookgate({ config: RELIABILITY_CONFIG });
  const s = sampler(hg);
  const until = phaseDeadline(0.4);
  const total = { sent: 0, answered200: 0, missing: 0, duplicates: 0, refused: 0, trials: 0 };
  try {
    for (let i = 0; i < num('trials') && Date.now() < until; i++) {
      const r = await killUnderLoad(hg, { rounds: 1, clients: 8, killAfter: num('kill-after'), tag: `soak-t${i}` });
      total.trials++;
      // Missing/duplicates are counted over the whole store each time: keep the worst, not the sum.
      for (const k of ['sent', 'answered200', 'refused']) total[k] += r[k];
      total.missing = Math.max(total.missing, r.missing);
      total.duplicates = Math.max(total.duplicates, r.duplicates);
    }
  } finally {
    s.stop();
    await hg.cleanup();
  }
  rows.push({
    phase: 'kill -9 under load',
    trials: total.trials,
    requests: total.sent,
    ok200: total.answered200,
    missing: total.missing,
    duplicates: total.duplicates,
    bad: total.refused,
    ...s.peak,
  });
  if (total.missing || total.duplicates || total.refused)
    failures.push('kill -9: lost, duplicated or refused requests');
}

// 2. fuzz
{
  const hg = await startHookgate({ config: RELIABILITY_CONFIG });
  const s = sampler(hg);
  const rand = prng(num('seed'));
  let ok200 = 0;
  let bad = 0;
  const examples = [];
  try {
    const done = await pool(num('requests'), concurrency, phaseDeadline(0.6), async (i) => {
      const req = fuzzRequest(rand);
      try {
        const a = await send(hg.url, req);
        if (a.status === 200) ok200++;
        const v = contractViolation(req.method, a);
        if (v) {
          bad++;
          if (examples.length < 5) examples.push(`#${i} ${req.method} ${req.path}: ${v}`);
        }
      } catch (err) {
        bad++;
        if (examples.length < 5) examples.push(`#${i}: ${err.message}`);
      }
    });
    const alive =
      hg.proc.exitCode === null &&
      hg.proc.signalCode === null &&
      (await hg.post('/hooks/wake', { text: 'after the soak fuzz' })).status === 200;
    if (!alive) failures.push('fuzz: the process no longer accepts a valid wake');
    if (bad) failures.push(`fuzz: ${bad} answers broke the contract, e.g.\n  ${examples.join('\n  ')}`);
    rows.push({ phase: 'fuzz', trials: 1, requests: done, ok200, missing: 'n/a', duplicates: 'n/a', bad, ...s.peak });
  } finally {
    s.stop();
    await hg.cleanup();
  }
}

// 3. flood from many addresses
{
  const hg = await startHookgate({ config: RELIABILITY_CONFIG });
  const s = sampler(hg);
  let ok200 = 0;
  let bad = 0;
  try {
    const done = await pool(num('addresses'), concurrency, deadline, async (i) => {
      const addr = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      const good = i % 4 === 0;
      const headers = {
        authorization: `Bearer ${good ? TOKEN : `wrong-${i}`}`,
        'content-type': 'application/json',
        'x-forwarded-for': addr,
      };
      try {
        const res = await fetch(`${hg.url}/hooks/wake`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ text: `flood ${i}`, mode: 'next-heartbeat' }),
        });
        await res.arrayBuffer();
        if (res.status === 200) ok200++;
        if (res.status !== (good ? 200 : 401)) bad++;
      } catch {
        bad++;
      }
    });
    rows.push({
      phase: 'flood (distinct addresses)',
      trials: 1,
      requests: done,
      ok200,
      missing: 'n/a',
      duplicates: 'n/a',
      bad,
      ...s.peak,
    });
    if (bad) failures.push(`flood: ${bad} answers other than 200 (right token) / 401 (wrong token)`);
  } finally {
    s.stop();
    await hg.cleanup();
  }
}

// 4. route hijack
await routeHijackPhase();

/**
 * Requests that name attacker recipients must not move where the main agent's replies go (docs/security.md, "Who
 * decides where replies go"): per trial, 20 such requests (half through a mapping's templated `to`), then a wake;
 * `bad` counts the heartbeat deliveries that reached an attacker.
 */
async function routeHijackPhase() {
  const ATTACKS = 20;
  const discord = await startHijackDiscord(ATTACKS);
  const hg = await startHookgate({ config: hijackConfig(RELIABILITY_CONFIG, discord.url) });
  const s = sampler(hg);
  const total = { trials: 0, requests: 0, heartbeats: 0, hijacked: 0, asked: 0 };
  try {
    for (let i = 0; i < num('hijack-trials'); i++) {
      const r = await probeRouteHijack(hg, discord, { attacks: ATTACKS, tag: `soak-h${i}` });
      total.trials++;
      total.requests += ATTACKS + 1;
      total.heartbeats += r.heartbeats;
      total.hijacked += r.hijacked;
      total.asked += r.attacksDelivered;
    }
  } finally {
    s.stop();
    await hg.cleanup();
    await discord.close();
  }
  rows.push({
    phase: 'route hijack (heartbeats at an attacker)',
    trials: total.trials,
    requests: total.requests,
    ok200: total.requests,
    missing: 'n/a',
    duplicates: 'n/a',
    bad: total.hijacked,
    ...s.peak,
  });
  if (total.hijacked)
    failures.push(
      `route hijack: ${total.hijacked} of ${total.heartbeats} heartbeat replies reached an attacker's recipient`,
    );
  if (total.heartbeats < total.trials || total.asked < total.trials * ATTACKS)
    failures.push(
      `route hijack: ${total.heartbeats} heartbeat replies for ${total.trials} wakes, ${total.asked} of ${total.trials * ATTACKS} attack replies where they asked`,
    );
}
// 5. connection fairness: the flood holds every connection it may keep; a fresh address must still be answered.
async function connectionFairnessPhase() {
  const hg = await startHookgate({ config: RELIABILITY_CONFIG });
  const s = sampler(hg);
  try {
    const r = await fairnessProbe({
      url: hg.url,
      token: TOKEN,
      addresses: loopbackAddresses(10, 20),
      perAddress: 64,
      client: '127.0.0.50',
      requests: 50,
      timeoutMs: 5000,
    });
    const phase = `connection fairness (20 addresses; slowest ${r.maxMs} ms)`;
    rows.push({
      phase,
      trials: 1,
      requests: r.outcomes.length,
      ok200: r.answered,
      missing: 'n/a',
      duplicates: 'n/a',
      bad: r.refused,
      ...s.peak,
    });
    const unanswered = r.outcomes.filter((o) => o.outcome !== 200).map((o) => o.outcome);
    if (r.refused)
      failures.push(
        `connection fairness: ${r.refused} of ${r.outcomes.length} wakes from a fresh address not answered 200 (${[...new Set(unanswered)].join(', ')})`,
      );
  } finally {
    s.stop();
    await hg.cleanup();
  }
}
await connectionFairnessPhase();

const mib = (b) => `${(b / MiB).toFixed(1)} MiB`;
const table = [
  [
    'phase',
    'trials',
    'requests',
    'answered 200',
    'missing',
    'dup. (receiver)',
    'contract breaks',
    'peak RSS',
    'peak WAL',
    'peak store',
  ],
  ...rows.map((r) =>
    [
      r.phase,
      r.trials,
      r.requests,
      r.ok200,
      r.missing,
      r.phase.startsWith('kill') ? `${r.duplicates} (store); receiver n/a` : 'n/a',
      r.bad,
      mib(r.rss),
      mib(r.wal),
      mib(r.store),
    ].map(String),
  ),
];
const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
const line = (row) => `| ${row.map((cell, c) => cell.padEnd(widths[c])).join(' | ')} |`;
console.log(
  [line(table[0]), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...table.slice(1).map(line)].join('\n'),
);
if (failures.length) {
  console.error(`\nFAILED:\n${failures.join('\n')}`);
  process.exit(1);
}
