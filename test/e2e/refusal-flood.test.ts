/**
 * Refusals cost bounded storage however many addresses send them. A flood of wrong tokens from
 * 10,000 addresses (a trusted proxy's X-Forwarded-For) with 10 KB paths used to store one ~10 KB record each.
 */
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Hookgate, runCli, startHookgate, TOKEN } from '../support/server.js';

const ADDRESSES = 10_000;
const PATH = `/hooks/agent/${'p'.repeat(10 * 1024)}`;

function storeBytes(hg: Hookgate): number {
  return ['hookgate.db', 'hookgate.db-wal'].reduce((n, f) => {
    const p = join(hg.dir, 'data', f);
    return n + (existsSync(p) ? statSync(p).size : 0);
  }, 0);
}

function post(url: string, agent: Agent, forwardedFor: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        hostname,
        port,
        path: PATH,
        method: 'POST',
        agent,
        headers: { authorization: 'Bearer wrong', 'x-forwarded-for': forwardedFor, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end('{"message":"x"}');
  });
}

describe('a flood of refusals from 10,000 addresses', () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate({ config: { gateway: { trustedProxies: ['127.0.0.1'] }, logging: { level: 'info' } } });
  });
  after(() => hg.cleanup());

  it('grows the store by less than 1 MB, and `received --rejected` shows the counts', async () => {
    // The store exists and has its schema before the measurement starts.
    assert.equal((await hg.post('/hooks/wake', { text: 'warm up' }, { authorization: `Bearer ${TOKEN}` })).status, 200);
    await hg.stop();
    const before = storeBytes(hg);
    await hg.restart();

    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const statuses = new Map<number, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < ADDRESSES) {
          const i = next++;
          const status = await post(hg.url, agent, `198.18.${i >> 8}.${i & 255}`);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );
    agent.destroy();
    assert.deepEqual([...statuses], [[401, ADDRESSES]]);
    await hg.stop(); // a clean stop stores the current window of counts

    const grown = storeBytes(hg) - before;
    process.stdout.write(`# store growth for ${ADDRESSES} refusals with 10 KB paths: ${grown} bytes\n`);
    assert.ok(grown < 1024 * 1024, `the store grew ${grown} bytes`);

    const cli = await runCli(['received', '--rejected', '--json', '--limit', '1000', '--config', hg.configFile]);
    assert.equal(cli.code, 0, cli.stderr);
    const rows = JSON.parse(cli.stdout) as Array<{
      status: number;
      code: string;
      path: string;
      clientIp: string;
      count?: number;
    }>;
    assert.equal(
      rows.reduce((n, r) => n + (r.count ?? 0), 0),
      ADDRESSES,
    );
    assert.ok(rows.every((r) => r.status === 401 && r.code === 'unauthorized'));
    // The path class: the sub-path cut to 64 characters and marked, or `other` for the folded overflow.
    assert.deepEqual(new Set(rows.map((r) => r.path)), new Set([`agent/${'p'.repeat(58)}…`, 'other']));
    // Summed over windows: on a slow machine the flood may cross a minute boundary and be counted in two.
    assert.ok(
      rows.filter((r) => r.clientIp === 'other').reduce((n, r) => n + r.count!, 0) > ADDRESSES / 2,
      'the addresses past the key bound fold into `other`',
    );
    // Every row, as above: the newest window's own rows alone can fill the default page.
    const text = await runCli(['received', '--rejected', '--limit', '1000', '--config', hg.configFile]);
    assert.match(text.stdout, /^AT +WINDOW +COUNT +PATH +CLIENTIP +STATUS +CODE/);
    assert.match(text.stdout, /60 s +\d+ +other +other +401 +unauthorized/);
  });
});
