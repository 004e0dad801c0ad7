/**
 * kill -9 under concurrent load, in rounds, with counts (docs/reference.md#durability). Unlike
 * test/e2e/durability.test.ts (one burst, one kill, answered requests present), senders here retry what got no answer
 * after the restart with the same idempotency key, so the count also shows that nothing is stored twice. The long
 * version: `npm run soak`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { killUnderLoad } from '../support/kill-load.js';
import { startHookgate } from '../support/server.js';

describe('reliability: kill -9 under load', { timeout: 60_000 }, () => {
  it('4 rounds of 8 clients: every request answered 200 is stored once, none missing, none duplicated', async (t) => {
    const hg = await startHookgate({
      store: 'sqlite',
      config: { logging: { level: 'info' }, heartbeat: { every: 'off' } },
    });
    try {
      const r = await killUnderLoad(hg, { rounds: 4, clients: 8, killAfter: 400 });
      t.diagnostic(JSON.stringify(r));
      assert.equal(r.refused, 0);
      assert.ok(r.answered200 >= 4 * 400, `only ${r.answered200} answered 200`);
      assert.equal(r.missing, 0, `${r.missing} of ${r.answered200} accepted wakes lost`);
      assert.equal(r.duplicates, 0, `${r.duplicates} wakes stored twice`);
      assert.ok(r.retried > 0, 'no request was in flight at any kill: the retry path was not tested');
      const after = await hg.post('/hooks/wake', { text: 'after the rounds' });
      assert.equal(after.status, 200);
    } finally {
      await hg.cleanup();
    }
  });
});
