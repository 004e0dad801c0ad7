import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressBucket } from '../../src/net/client-ip.js';
import { AuthFailureLimiter } from '../../src/net/limiter.js';
import { type LockoutStore, shareLockouts } from '../../src/ingress/lockout-sync.js';
import type { ClusterNotice } from '../../src/store/types.js';
import { waitFor } from '../support/wait.js';
import { captureLogger } from '../support/log-capture.js';

const LIMITS = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 300, maxTrackedClients: 100 };

/** The cluster's lockouts: one table and one notice bus for every node's store. */
function cluster() {
  const table = new Map<string, number>();
  const listeners = new Set<(n: ClusterNotice) => void>();
  const writes: Array<{ bucket: string; until: number }> = [];
  const store = (over: Partial<LockoutStore> = {}): LockoutStore => ({
    shared: true,
    async shareLockout(bucket, until) {
      writes.push({ bucket, until });
      table.set(bucket, Math.max(until, table.get(bucket) ?? 0));
      for (const l of listeners) l({ kind: 'lockout', bucket, until });
    },
    async activeLockouts(now) {
      return [...table].filter(([, until]) => until > now).map(([bucket, until]) => ({ bucket, until }));
    },
    subscribe(l) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    ...over,
  });
  return { table, listeners, writes, store };
}

describe('auth-failure lockouts across nodes', () => {
  it('a lockout is shared once per lock, not per failure; the other node refuses the client at once', () => {
    const c = cluster();
    const a = new AuthFailureLimiter(LIMITS);
    const b = new AuthFailureLimiter(LIMITS);
    const stops = [
      shareLockouts(a, c.store(), captureLogger().logger),
      shareLockouts(b, c.store(), captureLogger().logger),
    ];
    const now = Date.now();
    assert.equal(a.fail('203.0.113.9', now), 0);
    assert.equal(a.fail('203.0.113.9', now), 0);
    assert.equal(c.writes.length, 0, 'failures are counted in memory, never written');
    assert.equal(a.fail('203.0.113.9', now), 300);
    assert.deepEqual(c.writes, [{ bucket: addressBucket('203.0.113.9'), until: now + 300_000 }]);
    assert.equal(b.retryAfter('203.0.113.9', now + 1), 300, 'node b refuses it too');
    // While locked the handler answers 429 without counting; even counted failures would not write per failure.
    a.fail('203.0.113.9', now + 2);
    assert.equal(c.writes.length, 1);
    // An IPv6 lockout covers the whole /64 on the other node.
    for (let i = 0; i < 3; i++) a.fail('2001:db8:1:2::7', now);
    assert.ok(b.retryAfter('2001:db8:1:2::ffff', now) > 0);
    for (const stop of stops) stop();
    assert.equal(c.listeners.size, 0, 'stopping unsubscribes');
  });

  it('running lockouts are applied at start and by the periodic sync (a lost notice)', async () => {
    const c = cluster();
    const now = Date.now();
    c.table.set(addressBucket('198.51.100.1'), now + 60_000);
    c.table.set(addressBucket('198.51.100.2'), now - 1); // over
    const b = new AuthFailureLimiter(LIMITS);
    const stop = shareLockouts(b, c.store({ subscribe: () => () => {} }), captureLogger().logger, { syncMs: 20 });
    try {
      await waitFor('the start sync', () => b.retryAfter('198.51.100.1', Date.now()) > 0);
      assert.equal(b.retryAfter('198.51.100.2', Date.now()), 0);
      c.table.set(addressBucket('198.51.100.3'), Date.now() + 60_000); // its notice never came
      await waitFor('the periodic sync', () => b.retryAfter('198.51.100.3', Date.now()) > 0);
    } finally {
      stop();
    }
  });

  it('external lockouts keep the memory bound, never shorten a longer lock, and cannot lock for more than a day', () => {
    const limiter = new AuthFailureLimiter({ ...LIMITS, maxTrackedClients: 10 });
    const now = Date.now();
    for (let i = 0; i < 1000; i++) limiter.lock(`10.0.${i >> 8}.${i & 255}`, now + 60_000, now);
    assert.equal(limiter.size, 10);
    assert.equal(limiter.lock('10.9.9.9', now + 1000, now), true);
    assert.equal(limiter.lock('10.9.9.9', now + 500, now), false, 'a shorter lock does not replace a longer one');
    assert.equal(limiter.retryAfter('10.9.9.9', now), 1);
    limiter.lock('10.8.8.8', now + 365 * 86_400_000, now);
    assert.equal(limiter.retryAfter('10.8.8.8', now), 86_400);
    assert.equal(limiter.lock('10.7.7.7', now - 1, now), false, 'an expired lockout is ignored');
  });

  it('a store that fails is logged (rate-limited), never thrown; a single-process store shares nothing', async () => {
    const { lines, logger: log } = captureLogger();
    const failing = cluster().store({
      shareLockout: () => Promise.reject(Object.assign(new Error('connection lost'), { code: 'store_unavailable' })),
      activeLockouts: () => Promise.reject(Object.assign(new Error('connection lost'), { code: 'store_unavailable' })),
    });
    const limiter = new AuthFailureLimiter(LIMITS);
    const stop = shareLockouts(limiter, failing, log, { syncMs: 10 });
    const now = Date.now();
    for (let client = 1; client <= 20; client++) for (let i = 0; i < 3; i++) limiter.fail(`192.0.2.${client}`, now);
    await new Promise((r) => setTimeout(r, 100));
    stop();
    const shareLines = lines.filter((l) => String(l.msg).startsWith('could not share a lockout'));
    assert.equal(shareLines.length, 1, '20 failed shares, one line');
    assert.equal(lines.filter((l) => String(l.msg).startsWith("could not read the other nodes' lockouts")).length, 1);
    assert.ok(limiter.retryAfter('192.0.2.1', now) > 0, 'still locked locally');

    const single = cluster();
    const local = new AuthFailureLimiter(LIMITS);
    shareLockouts(local, single.store({ shared: false }), log)();
    for (let i = 0; i < 3; i++) local.fail('192.0.2.77', now);
    assert.equal(single.writes.length, 0);
    assert.equal(single.listeners.size, 0);
  });
});
