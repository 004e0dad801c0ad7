// `npm run bench -- --only latency`: latency at fixed request rates below saturation, open loop (bench/openloop.mjs:
// counted from each request's scheduled time, so a stall is charged to every request it held up).
//
// The floor server's saturated rate is measured first, in the same run; then, at LATENCY_FRACTIONS of it (default
// 0.25, 0.5, 0.75), each target gets one open-loop round of LATENCY_SECONDS (default 10): the bare server, the floor,
// the contract floor's /hooks/wake, hookgate /hooks/wake, the same with checkpoints on their own thread
// (`storage.checkpoints: "thread"`: if its tail is shorter, the tail is the checkpoints), the contract floor's
// /hooks/agent and hookgate's, both with their runs executing (each backlog drained before the next round). Servers
// are pinned as in the rest of the bench; the generator runs on the load core. Each target is judged on the contract
// floor's round of the same kind at the same rate too (bench/contract-floor-server.mjs, its /hooks/wake and its
// /hooks/agent with runs executing): missed there as well, it is beyond the contract floor
// (latencyVerdicts). The floor's figure is printed beside it.
//
// Where the tail comes from: hookgate's /metrics (admin listener on, no client) is scraped once a second during its
// rounds, for the group commits slower than 5 ms and the event loop's longest delay in that second; the generator
// reports the scheduled time of its slowest 1 % of requests, and the table says how many of them fell in a second
// that had a slow commit. LATENCY_SCRAPE=0 turns the scrape off. LATENCY_OUT=DIR writes each round's histogram as CSV
// and an SVG of the latency percentile curves.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ADMIN_TOKEN,
  cpuMicros,
  drain,
  metOrBeyond,
  peakRssMiB,
  round,
  runLoad,
  startBenchServer,
  startContractFloor,
  startHookgate,
  TOKEN,
  verdictWord,
} from './pinned.mjs';

const root = new URL('..', import.meta.url).pathname;
export const LATENCY_TARGETS = { wakeP99ToBare: 2, wakeP99Ms: 5, agentP99Ms: 10 };
/** The rounds' names, as they appear in the table, the JSON and the verdicts. */
export const ROUND_NAMES = {
  bare: 'bare node:http',
  floor: 'floor (bare + grouped SQLite commit)',
  contractWake: 'contract floor /hooks/wake',
  wake: 'hookgate /hooks/wake',
  contractAgent: 'contract floor /hooks/agent (runs executing)',
  agent: 'hookgate /hooks/agent (runs executing)',
};
const {
  bare: BARE,
  floor: FLOOR,
  contractWake: CONTRACT_WAKE,
  wake: WAKE,
  contractAgent: CONTRACT_AGENT,
  agent: AGENT,
} = ROUND_NAMES;

/** One open-loop round from a process pinned to the load core; resolves with openloop.mjs's JSON summary. */
export async function openLoopRound(o, { url, kind, rate, ...common }) {
  return (await openLoopRounds(o, [{ url, kind, rate }], common))[0];
}

/** openLoopRound, with the CPU that process `pid` (the server) spent per answered request meanwhile: `cpuPerReq`. */
export async function openLoopCpuRound(o, pid, load) {
  const cpu0 = cpuMicros(pid);
  const r = await openLoopRound(o, load);
  return { ...r, cpuPerReq: (cpuMicros(pid) - cpu0) / Math.max(1, r.answered) };
}

/**
 * Several loads ({url, kind, rate}) in one round, from one generator process on the load core: two processes there
 * would take turns at the core and send late. Resolves with one openloop.mjs summary per load.
 */
export function openLoopRounds(
  o,
  loads,
  { seconds, token, connections = o.connections, warmup = true, wakeMode = 'next-heartbeat' },
) {
  const list = (key) => loads.map((l) => String(l[key])).join(',');
  const args = [
    join(root, 'bench/openloop.mjs'),
    list('url'),
    list('kind'),
    list('rate'),
    String(seconds),
    String(connections),
    token ?? '',
  ];
  const [file, argv] =
    o.loadCpu === null ? [process.execPath, args] : ['taskset', ['-c', String(o.loadCpu), process.execPath, ...args]];
  return new Promise((resolve, reject) => {
    const env = {
      ...process.env,
      OPENLOOP_WARMUP: warmup ? '1' : '0',
      OPENLOOP_WAKE_MODE: wakeMode,
      OPENLOOP_PARENT: '1',
    };
    // Its stdin is a pipe from here: when this process ends, however, the generator sees it close and ends too.
    const child = spawn(file, argv, { env, stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    // `close`, not `exit`: the child's stdout may still hold the end of its summary when it exits.
    child.once('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || !line) return reject(new Error(`openloop exited ${code}: ${out.slice(-300)}`));
      const summary = JSON.parse(line);
      resolve(summary.loads ?? [summary]);
    });
  });
}

function scrape(adminUrl) {
  return new Promise((resolve) => {
    const req = httpGet(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve(text));
    });
    req.on('error', () => resolve(''));
  });
}

/** From the exposition text: commits in all, those over 5 and 10 ms, and the event loop's longest delay since the last scrape. */
export function commitFigures(text) {
  const num = (re) => Number(re.exec(text)?.[1] ?? Number.NaN);
  const total = num(/^hookgate_store_commit_duration_seconds_count(?:\{[^}]*\})? (\S+)/m);
  const le = (edge) =>
    num(new RegExp(`^hookgate_store_commit_duration_seconds_bucket\\{[^}]*le="${edge}"[^}]*\\} (\\S+)`, 'm'));
  return {
    total,
    over5: total - le('0.005'),
    over10: total - le('0.01'),
    lagMaxMs: num(/^nodejs_eventloop_lag_max_seconds(?:\{[^}]*\})? (\S+)/m) * 1000,
  };
}

/** Scrapes /metrics once a second while a round runs: per second, commits over 5 / 10 ms and the longest loop delay. */
function commitSampler(adminUrl, enabled) {
  const seconds = [];
  let last;
  let timer;
  const sample = async () => {
    const f = commitFigures(await scrape(adminUrl));
    if (last)
      seconds.push({
        at: Date.now(),
        commits: f.total - last.total,
        over5: f.over5 - last.over5,
        over10: f.over10 - last.over10,
        lagMaxMs: f.lagMaxMs,
      });
    last = f;
  };
  return {
    async start() {
      if (!enabled) return;
      await sample();
      timer = setInterval(sample, 1000);
    },
    async stop() {
      if (!enabled) return seconds;
      clearInterval(timer);
      await sample();
      return seconds;
    },
  };
}

/** Of the slowest 1 % of requests (by scheduled time), how many were scheduled in a second that had a commit over 5 ms. */
function tailVsCommits(result, seconds) {
  if (!seconds.length) return undefined;
  const slow = result.slowest.slice(0, Math.max(1, Math.ceil(result.answered / 100)));
  // Second i covers (seconds[i-1].at, seconds[i].at]; a request is charged to the second it was answered in, at most
  // its latency after its scheduled time.
  const secondOf = (at) => seconds.findIndex((s) => s.at >= at);
  let inSlowCommitSecond = 0;
  for (const [ms, at] of slow) {
    const i = secondOf(at + ms);
    if (i !== -1 && seconds[i].over5 > 0) inSlowCommitSecond++;
  }
  const withSlowCommit = seconds.filter((s) => s.over5 > 0).length;
  return {
    slowRequests: slow.length,
    inSlowCommitSecond,
    secondsWithSlowCommit: withSlowCommit,
    seconds: seconds.length,
    commits: seconds.reduce((n, s) => n + s.commits, 0),
    commitsOver5: seconds.reduce((n, s) => n + s.over5, 0),
    commitsOver10: seconds.reduce((n, s) => n + s.over10, 0),
    lagMaxMs: Math.max(...seconds.map((s) => s.lagMaxMs)),
  };
}

export async function latencyBench(o) {
  const seconds = Number(process.env.LATENCY_SECONDS ?? 10);
  const fractions = (process.env.LATENCY_FRACTIONS ?? '0.25,0.5,0.75').split(',').map(Number);
  const scrapeOn = process.env.LATENCY_SCRAPE !== '0';
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-latency-'));
  mkdirSync(join(dir, 'thread'));
  const lo = { ...o, admin: true };
  const bare = await startBenchServer(o, 'bare-server.mjs');
  const floor = await startBenchServer(o, 'floor-server.mjs', join(dir, 'floor.db'));
  const contract = await startContractFloor(o, dir);
  const hg = await startHookgate(lo, dir);
  const hgThread = await startHookgate(lo, join(dir, 'thread'), { checkpoints: 'thread' });
  const targets = [
    { name: BARE, url: `http://127.0.0.1:${bare.info.port}/`, kind: 'bare', pid: bare.child.pid },
    {
      name: FLOOR,
      url: `http://127.0.0.1:${floor.info.port}/`,
      kind: 'wake',
      pid: floor.child.pid,
    },
    {
      name: CONTRACT_WAKE,
      url: `${contract.url}/hooks/wake`,
      kind: 'wake',
      token: TOKEN,
      pid: contract.child.pid,
    },
    { name: WAKE, url: `${hg.url}/hooks/wake`, kind: 'wake', token: TOKEN, pid: hg.child.pid, hg },
    {
      name: '/hooks/wake, checkpoints: "thread"',
      url: `${hgThread.url}/hooks/wake`,
      kind: 'wake',
      token: TOKEN,
      pid: hgThread.child.pid,
      hg: hgThread,
    },
    {
      name: CONTRACT_AGENT,
      url: `${contract.url}/hooks/agent`,
      kind: 'agent',
      token: TOKEN,
      pid: contract.child.pid,
      runs: contract,
    },
    {
      name: AGENT,
      url: `${hg.url}/hooks/agent`,
      kind: 'agent',
      token: TOKEN,
      pid: hg.child.pid,
      hg,
      runs: hg,
    },
  ];
  try {
    // Saturation of the floor (closed loop, as the ingress rounds), after a warm-up of every target.
    for (const t of targets)
      await runLoad(o, { url: t.url, kind: t.kind, token: t.token, seconds: 2, connections: o.connections });
    await drain(hg);
    await drain(contract);
    const sat = await round(o, floor.child.pid, {
      url: targets[1].url,
      kind: 'wake',
      seconds: o.seconds,
      connections: o.connections,
    });
    const rounds = [];
    for (const fraction of fractions) {
      const rate = Math.max(100, Math.round(sat.rps * fraction));
      for (const t of targets) {
        const sampler = t.hg ? commitSampler(t.hg.adminUrl, scrapeOn) : undefined;
        await sampler?.start();
        const r = await openLoopCpuRound(o, t.pid, { url: t.url, kind: t.kind, rate, seconds, token: t.token });
        const perSecond = sampler ? await sampler.stop() : [];
        const drained = t.runs ? await drain(t.runs, 180_000) : undefined;
        rounds.push({
          target: t.name,
          fraction,
          rate,
          ...r,
          tail: tailVsCommits(r, perSecond),
          perSecond,
          drained,
        });
      }
    }
    const rss = {
      bare: peakRssMiB(bare.child.pid),
      floor: peakRssMiB(floor.child.pid),
      contract: peakRssMiB(contract.child.pid),
      hookgate: peakRssMiB(hg.child.pid),
      hookgateThread: peakRssMiB(hgThread.child.pid),
    };
    if (process.env.LATENCY_OUT) writePlots(process.env.LATENCY_OUT, rounds);
    const verdicts = latencyVerdicts(rounds);
    return {
      seconds,
      fractions,
      floorSaturated: sat,
      rounds,
      rss,
      targets: verdicts,
      allMet: verdicts.every((v) => v.ok),
      allMetOrBeyond: verdicts.every(metOrBeyond),
    };
  } finally {
    for (const h of [hg, hgThread]) {
      h.db.close();
      h.child.kill('SIGTERM');
    }
    contract.db.close();
    contract.child.kill();
    bare.child.kill();
    floor.child.kill();
    await Promise.all(
      [hg, hgThread].map((h) => new Promise((res) => (h.child.exitCode === null ? h.child.once('exit', res) : res()))),
    );
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Each target is also judged on the contract floor's round of the same kind at the same rate: `beyond` when the
 * contract floor misses it too, as the ingress rounds judge theirs. The contract floor is the least that implements
 * hookgate's contract (its checks, its rows committed before the answer, its agent runs executed after it), so a
 * latency it does not reach at a rate, no implementation of the contract reaches there. The floor's figure (bare + one
 * grouped commit, nothing else) is given beside it, for what the commit alone costs.
 */
export function latencyVerdicts(rounds) {
  const at = (target, fraction) => rounds.find((r) => r.target === target && r.fraction === fraction);
  const judged = (target, value, floor, contract, meets) => ({
    target,
    value,
    floor,
    contract,
    ok: meets(value),
    beyond: contract !== undefined && !meets(contract),
  });
  const v = [];
  for (const fraction of [...new Set(rounds.map((r) => r.fraction))]) {
    const bare = at(BARE, fraction);
    const wake = at(WAKE, fraction);
    if (!bare || !wake) continue;
    const toBare = (round) => (round ? round.p99 / bare.p99 : undefined);
    v.push(
      judged(
        `wake p99 ≤ ${LATENCY_TARGETS.wakeP99ToBare}× bare p99 at ${fraction * 100} %`,
        toBare(wake),
        toBare(at(FLOOR, fraction)),
        toBare(at(CONTRACT_WAKE, fraction)),
        (x) => x <= LATENCY_TARGETS.wakeP99ToBare,
      ),
    );
  }
  // The absolute limits, at half the floor's saturated rate.
  const within = (label, target, contractTarget, limitMs) => {
    const round = at(target, 0.5);
    if (round)
      v.push(
        judged(
          `${label} p99 ≤ ${limitMs} ms at 50 %`,
          round.p99,
          at(FLOOR, 0.5)?.p99,
          at(contractTarget, 0.5)?.p99,
          (x) => x <= limitMs,
        ),
      );
  };
  within('wake', WAKE, CONTRACT_WAKE, LATENCY_TARGETS.wakeP99Ms);
  within('agent', AGENT, CONTRACT_AGENT, LATENCY_TARGETS.agentP99Ms);
  return v;
}

/** Coarse bins for the text histogram, upper edges in ms. */
const BINS = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, Number.POSITIVE_INFINITY];

export function textHistogram(histogram, width = 40) {
  const counts = BINS.map(() => 0);
  for (const [top, n] of histogram) counts[BINS.findIndex((b) => top <= b * 1.0001)] += n;
  const total = counts.reduce((a, b) => a + b, 0);
  const peak = Math.max(...counts);
  let lo = 0;
  const lines = [];
  counts.forEach((n, i) => {
    if (n)
      lines.push(
        `    ${`${lo}–${BINS[i] === Number.POSITIVE_INFINITY ? '' : BINS[i]} ms`.padEnd(14)} ${String(n).padStart(8)} ${((100 * n) / total).toFixed(2).padStart(6)} % ${'#'.repeat(Math.max(1, Math.round((width * n) / peak)))}`,
      );
    lo = BINS[i];
  });
  return lines;
}

export function latencyTable(o, l) {
  const f = (n, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const lines = [
    `hookgate latency bench (open loop, pinned: servers on CPU ${o.serverCpu}, generator on CPU ${o.loadCpu}): ${o.connections} connections, rounds of ${l.seconds} s; node ${process.version}, ${new Date().toISOString()}`,
    `floor saturated (closed loop, ${o.seconds} s): ${f(l.floorSaturated.rps, 0)} req/s; rates below are fractions of it`,
    '',
    '| target | rate /s | achieved | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | non-2xx, errors | CPU µs/req | generator late p99 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...l.rounds.map(
      (r) =>
        `| ${r.target} | ${r.rate} (${r.fraction * 100} %) | ${f(r.achievedRate, 0)} | ${f(r.p50)} | ${f(r.p90)} | ${f(r.p99)} | ${f(r.p999)} | ${f(r.max)} | ${r.non2xx + r.errors + r.unanswered} | ${f(r.cpuPerReq, 0)} | ${f(r.generatorLateP99)} |`,
    ),
    '',
    'Where the tail comes from (hookgate rounds; /metrics once a second):',
    '| target | rate /s | commits | > 5 ms | > 10 ms | longest loop delay ms | slowest 1 % in a second with a commit > 5 ms | seconds with one |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...l.rounds
      .filter((r) => r.tail)
      .map(
        (r) =>
          `| ${r.target} | ${r.rate} | ${r.tail.commits} | ${r.tail.commitsOver5} | ${r.tail.commitsOver10} | ${f(r.tail.lagMaxMs, 1)} | ${r.tail.inSlowCommitSecond} of ${r.tail.slowRequests} | ${r.tail.secondsWithSlowCommit} of ${r.tail.seconds} |`,
      ),
    '',
    ...l.rounds
      .filter((r) => r.drained)
      .map(
        (r) =>
          `agent at ${r.rate}/s: runs drained ${f(r.drained.seconds, 1)} s after the round (${r.drained.left} left)`,
      ),
    `peak RSS MiB: bare ${f(l.rss.bare, 1)}, floor ${f(l.rss.floor, 1)}, contract floor ${f(l.rss.contract, 1)}, hookgate ${f(l.rss.hookgate, 1)}, hookgate (checkpoint thread) ${f(l.rss.hookgateThread, 1)}`,
    '',
    'Histograms (latency from the scheduled send time):',
  ];
  for (const r of l.rounds) lines.push(`  ${r.target} at ${r.rate}/s:`, ...textHistogram(r.histogram));
  lines.push(
    '',
    '| target | measured | the floor | the contract floor | met |',
    '|---|---:|---:|---:|:---:|',
    ...l.targets.map((v) => `| ${v.target} | ${f(v.value)} | ${f(v.floor)} | ${f(v.contract)} | ${verdictWord(v)} |`),
  );
  lines.push(
    '',
    'A "generator late p99" near the p99 means the generator itself could not keep the schedule (a busy load core): that round measures the machine, not the server.',
  );
  return lines.join('\n');
}

/** CSV of each round's histogram, and an SVG of latency against percentile (log scales), one curve per target and rate. */
function writePlots(out, rounds) {
  mkdirSync(out, { recursive: true });
  const csv = ['target,fraction,rate,upper_ms,count'];
  for (const r of rounds)
    for (const [top, n] of r.histogram) csv.push(`"${r.target}",${r.fraction},${r.rate},${top},${n}`);
  writeFileSync(join(out, 'latency-histograms.csv'), `${csv.join('\n')}\n`);
  const W = 760;
  const H = 420;
  const x = (p) => 60 + (Math.log10(1 / (1 - Math.min(p, 0.99999))) / 5) * (W - 80); // 0 → 99.999 %
  const y = (ms) => H - 40 - ((Math.log10(Math.max(ms, 0.01)) + 2) / 6) * (H - 60); // 0.01 ms → 10 s
  const colours = ['#555', '#1f77b4', '#8c564b', '#d62728', '#2ca02c', '#e377c2', '#9467bd'];
  const names = [...new Set(rounds.map((r) => r.target))];
  const dash = (fraction) => (fraction <= 0.25 ? '2,3' : fraction <= 0.5 ? '' : '8,3');
  const paths = rounds.map((r) => {
    let seen = 0;
    const pts = r.histogram.map(([top, n]) => {
      seen += n;
      return `${x(seen / r.answered).toFixed(1)},${y(top).toFixed(1)}`;
    });
    return `<polyline fill="none" stroke="${colours[names.indexOf(r.target) % colours.length]}" stroke-dasharray="${dash(r.fraction)}" points="${pts.join(' ')}"/>`;
  });
  const grid = [
    ...[0, 0.9, 0.99, 0.999, 0.9999].map(
      (p) => `<text x="${x(p) - 10}" y="${H - 20}" font-size="11">${(p * 100).toFixed(p > 0.99 ? 2 : 0)}%</text>`,
    ),
    ...[0.01, 0.1, 1, 10, 100, 1000].map(
      (ms) =>
        `<text x="5" y="${y(ms) + 4}" font-size="11">${ms} ms</text><line x1="60" x2="${W - 20}" y1="${y(ms)}" y2="${y(ms)}" stroke="#eee"/>`,
    ),
    ...names.map(
      (n, i) => `<text x="70" y="${20 + i * 14}" font-size="11" fill="${colours[i % colours.length]}">${n}</text>`,
    ),
    `<text x="${W - 300}" y="20" font-size="11">dotted 25 %, solid 50 %, dashed 75 % of the floor</text>`,
  ];
  writeFileSync(
    join(out, 'latency.svg'),
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}"><rect width="100%" height="100%" fill="white"/>${grid.join('')}${paths.join('')}</svg>\n`,
  );
}
