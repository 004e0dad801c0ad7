import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startNodeRegistry } from '../../src/runtime/node-registry.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { NodeInfo } from '../../src/store/types.js';
import { VERSION } from '../../src/version.js';
import { waitFor } from '../support/wait.js';
import { captureLogger } from '../support/log-capture.js';

const NODE = {
  id: 'host-a:123:abcd1234',
  host: 'host-a',
  pid: 123,
  version: VERSION,
  url: 'http://127.0.0.1:8787',
  startedAt: Date.now(),
};

describe('node registry', () => {
  it('registers at start, refreshes lastSeenAt, removes the row at a clean stop', async () => {
    const store = new SqliteStore({ path: ':memory:', writer: 'inline' });
    try {
      const reg = startNodeRegistry({ store, logger: captureLogger().logger, node: NODE, refreshMs: 20 });
      await waitFor('registered', async () => (await store.listNodes()).length === 1);
      const first = (await store.listNodes())[0]!;
      assert.deepEqual({ ...first, lastSeenAt: 0 }, { ...NODE, lastSeenAt: 0 });
      await waitFor('refreshed', async () => ((await store.listNodes())[0]?.lastSeenAt ?? 0) > first.lastSeenAt);
      await reg.stop();
      assert.deepEqual(await store.listNodes(), []);
      await new Promise((r) => setTimeout(r, 60));
      assert.deepEqual(await store.listNodes(), [], 'no refresh after the stop brings it back');
    } finally {
      await store.close();
    }
  });

  it('a failing store is logged once per outage and retried at the next tick; it never throws', async () => {
    const { lines, logger: log } = captureLogger();
    let down = true;
    const rows: NodeInfo[] = [];
    const store = {
      registerNode: async (n: NodeInfo) => {
        if (down) throw Object.assign(new Error('connection refused'), { code: 'store_unavailable' });
        rows.push(n);
      },
      removeNode: async () => {
        throw Object.assign(new Error('connection refused'), { code: 'store_unavailable' });
      },
    };
    const reg = startNodeRegistry({ store, logger: log, node: NODE, refreshMs: 10 });
    await new Promise((r) => setTimeout(r, 80));
    const failed = lines.filter((l) => String(l.msg).startsWith('refreshing this node in the node registry failed'));
    assert.equal(failed.length, 1);
    assert.equal(failed[0]!.code, 'store_unavailable');
    down = false;
    await waitFor('registered after the outage', () => rows.length > 0);
    assert.equal(
      lines.filter((l) => l.msg === 'refreshing this node in the node registry works again: resumed').length,
      1,
    );
    await reg.stop(); // removeNode fails: logged, not thrown
    assert.ok(lines.some((l) => String(l.msg).startsWith('could not remove this node')));
  });
});
