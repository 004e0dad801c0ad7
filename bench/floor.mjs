// `npm run bench -- --only floor`: how far /hooks/wake is from the floor of any durable ingress. The bare server,
// bench/floor-server.mjs (the bare server plus a SQLite group commit of two rows per request, answered after the
// commit; and again with one row per request), bench/journal-floor-server.mjs (the bare server plus one append of the turn's lines to a file),
// bench/contract-floor-server.mjs (the floor plus the least hookgate's HTTP contract asks of a wake) and hookgate,
// pinned as the rest of the bench, in interleaved rounds; medians and per-round ratios.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  TOKEN,
  median,
  peakRssMiB,
  round,
  runLoad,
  startBenchServer,
  startContractFloor,
  startHookgate,
  stopHookgate,
} from './pinned.mjs';

export async function floorBench(o) {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-bench-floor-'));
  const bare = await startBenchServer(o, 'bare-server.mjs');
  const floor = await startBenchServer(o, 'floor-server.mjs', join(dir, 'floor.db'));
  const floor1 = await startBenchServer(o, 'floor-server.mjs', join(dir, 'floor1.db'), '1');
  const journal = await startBenchServer(o, 'journal-floor-server.mjs', join(dir, 'journal.jsonl'));
  const contract = await startContractFloor(o, dir);
  const hg = await startHookgate({ ...o, admin: false }, dir);
  try {
    const targets = [
      ['bare', bare.child.pid, `http://127.0.0.1:${bare.info.port}/`, 'bare', undefined],
      ['floor', floor.child.pid, `http://127.0.0.1:${floor.info.port}/`, 'wake', undefined],
      ['floor1', floor1.child.pid, `http://127.0.0.1:${floor1.info.port}/`, 'wake', undefined],
      ['journal', journal.child.pid, `http://127.0.0.1:${journal.info.port}/`, 'wake', undefined],
      ['contract', contract.child.pid, `${contract.url}/hooks/wake`, 'wake', TOKEN],
      ['wake', hg.child.pid, `${hg.url}/hooks/wake`, 'wake', TOKEN],
    ];
    const load = (url, kind, token, seconds = o.seconds) => ({ url, kind, token, seconds, connections: o.connections });
    for (const [, , url, kind, token] of targets) await runLoad(o, load(url, kind, token, 2)); // warm-up, not measured
    const r = { bare: [], floor: [], floor1: [], journal: [], contract: [], wake: [] };
    for (let i = 0; i < o.rounds; i++) {
      for (const [name, pid, url, kind, token] of targets) r[name].push(await round(o, pid, load(url, kind, token)));
    }
    const row = (xs) => ({
      rps: median(xs.map((x) => x.rps)),
      p99: median(xs.map((x) => x.p99)),
      cpuPerReq: median(xs.map((x) => x.cpuPerReq)),
    });
    const per = (xs) => xs.map((x, i) => x.rps / r.bare[i].rps);
    return {
      rounds: r,
      bare: row(r.bare),
      floor: row(r.floor),
      floor1: row(r.floor1),
      journal: row(r.journal),
      contract: row(r.contract),
      wake: row(r.wake),
      floorRatios: per(r.floor),
      floor1Ratios: per(r.floor1),
      journalRatios: per(r.journal),
      contractRatios: per(r.contract),
      wakeRatios: per(r.wake),
      rss: {
        bare: peakRssMiB(bare.child.pid),
        floor: peakRssMiB(floor.child.pid),
        floor1: peakRssMiB(floor1.child.pid),
        journal: peakRssMiB(journal.child.pid),
        contract: peakRssMiB(contract.child.pid),
        hookgate: peakRssMiB(hg.child.pid),
      },
    };
  } finally {
    await stopHookgate(hg);
    bare.child.kill();
    floor.child.kill();
    floor1.child.kill();
    journal.child.kill();
    contract.db.close();
    contract.child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function floorTable(o, f) {
  const n = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  const line = (name, x, ratios, rss) =>
    `| ${name} | ${n(x.rps)} | ${n(x.p99, 2)} | ${n(x.cpuPerReq, 1)} | ${n(rss, 1)} | ${ratios ? n(median(ratios), 2) : '1.00'} |`;
  return [
    `hookgate bench, the floor (pinned: servers on CPU ${o.serverCpu}, load generator on CPU ${o.loadCpu}): ${o.connections} connections, ${o.rounds} rounds of ${o.seconds} s (bare, floor, one-row floor, journal, contract floor, wake), medians; ${new Date().toISOString()}`,
    '',
    '| server | req/s | p99 ms | CPU µs/req | peak RSS MiB | ratio to bare |',
    '|---|---:|---:|---:|---:|---:|',
    line('bare node:http', f.bare, undefined, f.rss.bare),
    line('floor (bare + grouped SQLite commit of two rows)', f.floor, f.floorRatios, f.rss.floor),
    line('one-row floor (the same, one row per request)', f.floor1, f.floor1Ratios, f.rss.floor1),
    line("journal floor (bare + one append of the turn's lines to a file)", f.journal, f.journalRatios, f.rss.journal),
    line(
      "contract floor (the floor + the contract's checks, no hookgate code)",
      f.contract,
      f.contractRatios,
      f.rss.contract,
    ),
    line('hookgate /hooks/wake', f.wake, f.wakeRatios, f.rss.hookgate),
    '',
    `floor / bare per round: ${f.floorRatios.map((x) => n(x, 2)).join(' ')}; one-row floor / bare: ${f.floor1Ratios.map((x) => n(x, 2)).join(' ')}; journal / bare: ${f.journalRatios.map((x) => n(x, 2)).join(' ')}; contract floor / bare: ${f.contractRatios.map((x) => n(x, 2)).join(' ')}; wake / bare: ${f.wakeRatios.map((x) => n(x, 2)).join(' ')}`,
  ].join('\n');
}
