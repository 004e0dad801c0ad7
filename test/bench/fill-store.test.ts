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
  fillStore: (
    dir: string,
    n: number,
    o?: { days?: number; agentEvery?: number; heartbeatEvery?: number; block?: number },
  ) => Promise<Record<string, number>>;
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

  it("the retention soak's shape: a heartbeat's turns and delivery every N requests, received blocks of a fractional size", async () => {
    const soak = mkdtempSync(join(tmpdir(), 'hookgate-fill-soak-test-'));
    try {
      const counts = await fillStore(soak, 1000, { days: 0.01, agentEvery: 10, heartbeatEvery: 50, block: 1.5 });
      // 100 runs: 1 failed (i % 100 = 3 never hits an agent request here: i % 10 = 9), so 100 replies; 20 heartbeats.
      assert.deepEqual(counts, {
        received_log: 667,
        system_events: 1000,
        runs: 100,
        session_messages: 2 * 100 + 2 * 20,
        deliveries: 100 + 20,
      });
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(join(soak, 'hookgate.db'), { readonly: true });
      try {
        const main = db
          .prepare(
            "SELECT role, MIN(length(content)) AS len FROM session_messages WHERE session_key = 'main' GROUP BY role",
          )
          .all() as Array<{ role: string; len: number }>;
        // The prompt carries 50 requests' events and the session's history: several KB, as a live heartbeat's.
        assert.ok(main.find((m) => m.role === 'user')!.len > 4000, JSON.stringify(main));
        const hb = db
          .prepare('SELECT COUNT(*) AS n FROM deliveries WHERE heartbeat_id IS NOT NULL AND run_id IS NULL')
          .get();
        assert.deepEqual(hb, { n: 20 });
        // Rows went in as hookgate writes them and changed state after: none is left in a state it passes through.
        const open = db
          .prepare(
            `SELECT (SELECT COUNT(*) FROM system_events WHERE consumed_at IS NULL) AS events,
                    (SELECT COUNT(*) FROM runs WHERE state IN ('queued', 'running') OR lease_owner IS NOT NULL) AS runs,
                    (SELECT COUNT(*) FROM deliveries WHERE state = 'pending' OR delivered_at IS NULL) AS deliveries`,
          )
          .get();
        assert.deepEqual(open, { events: 0, runs: 0, deliveries: 0 });
      } finally {
        db.close();
      }
    } finally {
      rmSync(soak, { recursive: true, force: true });
    }
  });
});
