import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fromRoot } from '../support/paths.js';

type Hookgate = {
  url: string;
  adminUrl: string;
  child: import('node:child_process').ChildProcess;
  db: { close(): void };
};
const { fillStore } = (await import(fromRoot('bench/fill-store.mjs'))) as {
  fillStore: (dir: string, n: number, o?: { days?: number }) => Promise<Record<string, number>>;
};
const pinned = (await import(fromRoot('bench/pinned.mjs'))) as {
  startHookgate: (o: object, dir: string) => Promise<Hookgate>;
  ADMIN_TOKEN: string;
};

describe('bench/fill-store.mjs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-fill-test-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('fills a store that hookgate starts on and lists as its own rows', async () => {
    const counts = await fillStore(dir, 2000, { days: 1 });
    // Every second request an agent run; 2 % of runs failed and 0.2 % timed out leave no reply turn and no delivery.
    assert.deepEqual(counts, {
      received_log: 125,
      system_events: 2000,
      runs: 1000,
      session_messages: 1978,
      deliveries: 978,
    });
    const hg = await pinned.startHookgate({ admin: true, serverCpu: null, nodeArgs: [] }, dir);
    try {
      const get = async (path: string) => {
        const res = await fetch(`${hg.adminUrl}${path}`, {
          headers: { authorization: `Bearer ${pinned.ADMIN_TOKEN}` },
        });
        assert.equal(res.status, 200, path);
        return (await res.json()) as {
          items: Array<Record<string, unknown>>;
          queues?: { runs: Record<string, number> };
        };
      };
      const runs = await get('/api/v1/runs?limit=200');
      assert.equal(runs.items.length, 200);
      assert.deepEqual(new Set(runs.items.map((r) => r.state)), new Set(['succeeded', 'failed']));
      const failed = await get('/api/v1/runs?state=failed');
      assert.equal(failed.items.length, 20);
      const dead = await get('/api/v1/deliveries?state=failed');
      assert.equal(dead.items.length, 10);
      const received = await get('/api/v1/received?outcome=accepted&limit=100');
      assert.equal(received.items.length, 100);
      assert.ok(received.items.every((r) => r.status === 200 && (r.path === 'wake' || r.path === 'agent')));
      const overview = await get('/api/v1/overview');
      // The overview's queues count only open work (finished runs are listed and paged, never counted whole).
      assert.deepEqual(overview.queues?.runs, { queued: 0, running: 0 });
    } finally {
      hg.db.close();
      hg.child.kill('SIGTERM');
      await new Promise((r) => (hg.child.exitCode === null ? hg.child.once('exit', r) : r(undefined)));
    }
  });
});
