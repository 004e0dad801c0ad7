/**
 * SLOW (about 40 s): the WAL stays bounded under sustained load. Concurrent clients on loopback
 * post wakes for 30 s against the real server (default inline writer); the WAL, sampled every 100 ms, must stay at
 * most 64 MB. Before the bound it grew without limit (1.8 GB after 40 s of 4 closed-loop clients): 30 s is already
 * many times the bound without it.
 * Run `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startHookgate } from '../support/server.js';

const SECONDS = 30;
const CLIENTS = 16;
const BOUND = 64 * 1024 * 1024;

describe('WAL bound (slow: 30 s of load)', { timeout: 120_000 }, () => {
  it(`${CLIENTS} closed-loop clients for ${SECONDS} s keep the WAL at most 64 MB, every answer 200`, async () => {
    const hg = await startHookgate({ store: 'sqlite', config: { logging: { level: 'info' } } }); // SQLite-specific: the WAL file;
    try {
      const wal = join(hg.dir, 'data/hookgate.db-wal');
      let peak = 0;
      const sampler = setInterval(
        () => (peak = Math.max(peak, statSync(wal, { throwIfNoEntry: false })?.size ?? 0)),
        100,
      );
      const end = Date.now() + SECONDS * 1000;
      const statuses = new Map<number, number>();
      let n = 0;
      const client = async () => {
        while (Date.now() < end) {
          const r = await hg.post('/hooks/wake', { text: `load ${n++} ${'x'.repeat(200)}`, mode: 'next-heartbeat' });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, client));
      clearInterval(sampler);
      const mib = (peak / 2 ** 20).toFixed(1);
      assert.deepEqual([...statuses.keys()], [200], `answers: ${JSON.stringify([...statuses])}`);
      assert.ok(n > 5_000, `only ${n} requests in ${SECONDS} s: not a sustained load`);
      assert.ok(peak <= BOUND, `the WAL reached ${mib} MiB after ${n} requests`);
      process.stdout.write(`# ${n} wakes in ${SECONDS} s, peak WAL ${mib} MiB\n`);
    } finally {
      await hg.cleanup();
    }
  });
});
