// `npm run bench -- --only admin-cost`: what the admin listener with one live-feed client costs the ingress (its bound:
// the wake ratio with it must stay within 5 % of the ratio without it). Two hookgate processes on the server's core —
// one without the admin listener, one with it (measured with and without one SSE client reading every byte) — and the
// bare server, in interleaved rounds, so a noisy machine affects all alike. Medians per round.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  TOKEN,
  attachFeed,
  median,
  peakRssMiB,
  round,
  runLoad,
  startBenchServer,
  startHookgate,
  stopHookgate,
} from './pinned.mjs';

/**
 * The bound the admin listener must keep (docs/performance.md): the ratio with the admin listener and a feed client,
 * over the ratio without.
 */
export const ADMIN_COST_BOUND = 0.95;

export async function adminCost(o) {
  const dirs = [mkdtempSync(join(tmpdir(), 'hookgate-bench-')), mkdtempSync(join(tmpdir(), 'hookgate-bench-admin-'))];
  const bare = await startBenchServer(o, 'bare-server.mjs');
  const plain = await startHookgate({ ...o, admin: false }, dirs[0]);
  const admin = await startHookgate({ ...o, admin: true }, dirs[1]);
  const feedTotal = { status: 0, bytes: 0, error: undefined };
  try {
    const bareUrl = `http://127.0.0.1:${bare.info.port}/`;
    const load = (url, kind, token, seconds = o.seconds) => ({ url, kind, token, seconds, connections: o.connections });
    for (const [url, kind, token] of [
      [bareUrl, 'bare'],
      [`${plain.url}/hooks/wake`, 'wake', TOKEN],
      [`${admin.url}/hooks/wake`, 'wake', TOKEN],
    ]) {
      await runLoad(o, load(url, kind, token, 2)); // warm-up (JIT, page cache), not measured
    }
    // The feed's cost is measured within one process (the admin one, with and without its client), the listener's
    // across two (with and without it): processes differ by a few per cent from start to start (an A/A run of two
    // identical ones read 0.93–1.07), which would drown a cost of a few per cent.
    const withFeed = async () => {
      const feed = await attachFeed(admin.adminUrl);
      try {
        return await round(o, admin.child.pid, load(`${admin.url}/hooks/wake`, 'wake', TOKEN));
      } finally {
        feed.close();
        Object.assign(feedTotal, {
          status: feed.state.status,
          bytes: feedTotal.bytes + feed.state.bytes,
          error: feed.state.error,
        });
      }
    };
    const r = { bare: [], wake: [], wakeListener: [], wakeAdmin: [] };
    for (let i = 0; i < o.rounds; i++) {
      r.bare.push(await round(o, bare.child.pid, load(bareUrl, 'bare')));
      // Alternate the order, so no measurement always comes right after another.
      const steps = [
        ['wake', () => round(o, plain.child.pid, load(`${plain.url}/hooks/wake`, 'wake', TOKEN))],
        ['wakeListener', () => round(o, admin.child.pid, load(`${admin.url}/hooks/wake`, 'wake', TOKEN))],
        ['wakeAdmin', withFeed],
      ];
      if (i % 2) steps.reverse();
      for (const [k, step] of steps) r[k].push(await step());
    }
    const row = (xs) => ({
      rps: median(xs.map((x) => x.rps)),
      p99: median(xs.map((x) => x.p99)),
      cpuPerReq: median(xs.map((x) => x.cpuPerReq)),
      sysPerReq: median(xs.map((x) => x.sysPerReq)),
    });
    const per = (a, b) => a.map((x, i) => x.rps / b[i].rps);
    const feedRatios = per(r.wakeAdmin, r.wakeListener);
    const listenerRatios = per(r.wakeListener, r.wake);
    const feedCost = median(feedRatios);
    const listenerCost = median(listenerRatios);
    return {
      rounds: r,
      bare: row(r.bare),
      wake: row(r.wake),
      wakeListener: row(r.wakeListener),
      wakeAdmin: row(r.wakeAdmin),
      ratios: per(r.wake, r.bare),
      adminRatios: per(r.wakeAdmin, r.bare),
      feedRatios,
      listenerRatios,
      relative: feedCost * listenerCost,
      feedCost,
      listenerCost,
      rss: { plain: peakRssMiB(plain.child.pid), admin: peakRssMiB(admin.child.pid) },
      feed: feedTotal,
      ok: feedCost * listenerCost >= ADMIN_COST_BOUND && feedTotal.status === 200,
    };
  } finally {
    for (const hg of [plain, admin]) {
      await stopHookgate(hg);
    }
    bare.child.kill();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

export function adminCostTable(o, a) {
  const f = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const fs = (xs) => xs.map((x) => f(x, 2)).join(' ');
  const cpu = (r) => `${f(r.cpuPerReq, 1)} (${f(r.sysPerReq, 1)})`;
  return [
    `hookgate bench, admin cost (pinned: servers on CPU ${o.serverCpu}, load generator on CPU ${o.loadCpu}): ${o.connections} connections, ${o.rounds} rounds of ${o.seconds} s (bare; wake without the admin listener; with it; with it and one live-feed client), medians; ${new Date().toISOString()}`,
    '',
    '| target | req/s | p99 ms | CPU µs/req (of it system) | peak RSS MiB |',
    '|---|---:|---:|---:|---:|',
    `| bare node:http | ${f(a.bare.rps)} | | ${cpu(a.bare)} | |`,
    `| /hooks/wake, no admin listener | ${f(a.wake.rps)} | ${f(a.wake.p99, 2)} | ${cpu(a.wake)} | ${f(a.rss.plain, 1)} |`,
    `| /hooks/wake, admin listener, no client | ${f(a.wakeListener.rps)} | ${f(a.wakeListener.p99, 2)} | ${cpu(a.wakeListener)} | ${f(a.rss.admin, 1)} |`,
    `| /hooks/wake, admin listener + 1 feed client | ${f(a.wakeAdmin.rps)} | ${f(a.wakeAdmin.p99, 2)} | ${cpu(a.wakeAdmin)} | |`,
    '',
    `wake / bare per round: ${fs(a.ratios)}; with the listener and a feed client: ${fs(a.adminRatios)}`,
    `the feed client (same process, with / without it) per round: ${fs(a.feedRatios)}; median ${f(a.feedCost, 3)}`,
    `the listener (two processes, with / without it) per round: ${fs(a.listenerRatios)}; median ${f(a.listenerCost, 3)}`,
    `feed: HTTP ${a.feed.status}, ${a.feed.bytes} bytes read${a.feed.error ? ` (${a.feed.error})` : ''}`,
    `listener × feed: ${f(a.relative, 3)} (bound ≥ ${ADMIN_COST_BOUND}): ${a.ok ? 'met' : 'NOT met'}`,
  ].join('\n');
}
