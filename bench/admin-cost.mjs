// `npm run bench -- --only admin-cost`: what the admin listener with one live-feed client costs the ingress (issue 14:
// the wake ratio with it must stay within 5 % of the ratio without it). Two hookgate processes on the server's core —
// one without the admin listener, one with it and one SSE client reading every byte — and the bare server, measured
// in interleaved rounds (bare, wake, wake with the feed), so a noisy machine affects both alike. Medians per round.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TOKEN, attachFeed, median, peakRssMiB, round, runLoad, startChild, startHookgate } from './pinned.mjs';

const root = new URL('..', import.meta.url).pathname;
/** The issue's bound: the ratio with the admin listener and a feed client, over the ratio without. */
export const ADMIN_COST_BOUND = 0.95;

export async function adminCost(o) {
  const dirs = [mkdtempSync(join(tmpdir(), 'hookgate-bench-')), mkdtempSync(join(tmpdir(), 'hookgate-bench-admin-'))];
  const bare = await startChild(process.execPath, [join(root, 'bench/bare-server.mjs')], { cpu: o.serverCpu, key: 'port' });
  const plain = await startHookgate({ ...o, admin: false }, dirs[0]);
  const admin = await startHookgate({ ...o, admin: true }, dirs[1]);
  const feed = await attachFeed(admin.adminUrl);
  try {
    const bareUrl = `http://127.0.0.1:${bare.info.port}/`;
    const load = (url, kind, token, seconds = o.seconds) => ({ url, kind, token, seconds, connections: o.connections });
    for (const [url, kind, token] of [[bareUrl, 'bare'], [`${plain.url}/hooks/wake`, 'wake', TOKEN], [`${admin.url}/hooks/wake`, 'wake', TOKEN]]) {
      await runLoad(o, load(url, kind, token, 2)); // warm-up (JIT, page cache), not measured
    }
    const r = { bare: [], wake: [], wakeAdmin: [] };
    for (let i = 0; i < o.rounds; i++) {
      r.bare.push(await round(o, bare.child.pid, load(bareUrl, 'bare')));
      // Alternate which hookgate goes first, so neither always runs right after the bare server.
      const pair = [
        ['wake', plain],
        ['wakeAdmin', admin],
      ];
      if (i % 2) pair.reverse();
      for (const [k, hg] of pair) r[k].push(await round(o, hg.child.pid, load(`${hg.url}/hooks/wake`, 'wake', TOKEN)));
    }
    const ratios = r.wake.map((w, i) => w.rps / r.bare[i].rps);
    const adminRatios = r.wakeAdmin.map((w, i) => w.rps / r.bare[i].rps);
    const costRatios = r.wakeAdmin.map((w, i) => w.rps / r.wake[i].rps);
    const relative = median(adminRatios) / median(ratios);
    return {
      rounds: r,
      bare: { rps: median(r.bare.map((x) => x.rps)), cpuPerReq: median(r.bare.map((x) => x.cpuPerReq)) },
      wake: { rps: median(r.wake.map((x) => x.rps)), p99: median(r.wake.map((x) => x.p99)), cpuPerReq: median(r.wake.map((x) => x.cpuPerReq)) },
      wakeAdmin: { rps: median(r.wakeAdmin.map((x) => x.rps)), p99: median(r.wakeAdmin.map((x) => x.p99)), cpuPerReq: median(r.wakeAdmin.map((x) => x.cpuPerReq)) },
      ratios,
      adminRatios,
      costRatios,
      relative,
      rss: { plain: peakRssMiB(plain.child.pid), admin: peakRssMiB(admin.child.pid) },
      feed: { ...feed.state },
      ok: relative >= ADMIN_COST_BOUND && feed.state.status === 200,
    };
  } finally {
    feed.close();
    for (const hg of [plain, admin]) {
      hg.db.close();
      hg.child.kill('SIGTERM');
      await new Promise((res) => (hg.child.exitCode === null ? hg.child.once('exit', res) : res()));
    }
    bare.child.kill();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

export function adminCostTable(o, a) {
  const f = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const fs = (xs) => xs.map((x) => f(x, 2)).join(' ');
  return [
    `hookgate bench, admin cost (pinned: servers on CPU ${o.serverCpu}, load generator on CPU ${o.loadCpu}): ${o.connections} connections, ${o.rounds} rounds of ${o.seconds} s (bare, wake, wake with the admin listener and one live-feed client), medians; ${new Date().toISOString()}`,
    '',
    '| target | req/s | p99 ms | CPU µs/req | peak RSS MiB |',
    '|---|---:|---:|---:|---:|',
    `| bare node:http | ${f(a.bare.rps)} | | ${f(a.bare.cpuPerReq)} | |`,
    `| /hooks/wake, no admin listener | ${f(a.wake.rps)} | ${f(a.wake.p99, 2)} | ${f(a.wake.cpuPerReq)} | ${f(a.rss.plain, 1)} |`,
    `| /hooks/wake, admin listener + 1 feed client | ${f(a.wakeAdmin.rps)} | ${f(a.wakeAdmin.p99, 2)} | ${f(a.wakeAdmin.cpuPerReq)} | ${f(a.rss.admin, 1)} |`,
    '',
    `wake / bare per round: ${fs(a.ratios)}; with the feed: ${fs(a.adminRatios)}; with / without per round: ${fs(a.costRatios)}`,
    `feed: HTTP ${a.feed.status}, ${a.feed.bytes} bytes read${a.feed.error ? ` (${a.feed.error})` : ''}`,
    `median ratio with the feed / without: ${f(a.relative, 3)} (bound ≥ ${ADMIN_COST_BOUND}): ${a.ok ? 'met' : 'NOT met'}`,
  ].join('\n');
}
