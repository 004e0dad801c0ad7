import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AuthFailureLimiter, type AuthFailureLimits } from '../../src/net/limiter.js';

const T0 = 1_700_000_000_000;
const LIMITS: AuthFailureLimits = { maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60, maxTrackedClients: 100 };

/** `n` failures of `client`, one `stepMs` apart from `start`; returns what each `fail` returned. */
function failMany(l: AuthFailureLimiter, client: string, n: number, start = T0, stepMs = 10): number[] {
  return Array.from({ length: n }, (_, i) => l.fail(client, start + i * stepMs));
}

describe('AuthFailureLimiter', () => {
  it('locks a client at the 20th failure within the window; the locking failure answers with the lockout', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    const first19 = failMany(l, '1.2.3.4', 19);
    assert.deepEqual(first19, Array(19).fill(0));
    assert.equal(l.retryAfter('1.2.3.4', T0 + 190), 0);
    assert.equal(l.fail('1.2.3.4', T0 + 190), 60);
    assert.equal(l.retryAfter('1.2.3.4', T0 + 190), 60);
  });

  it('answers later attempts with a Retry-After of at least 1 s, rounded up', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    const lockedAt = T0 + 190;
    failMany(l, 'c', 20);
    assert.equal(l.retryAfter('c', lockedAt + 1), 60); // 59.999 s → 60
    assert.equal(l.retryAfter('c', lockedAt + 30_500), 30); // 29.5 s → 30
    assert.equal(l.retryAfter('c', lockedAt + 30_900), 30); // 29.1 s → 30, not 29
    assert.equal(l.retryAfter('c', lockedAt + 58_800), 2); // 1.2 s → 2
    assert.equal(l.retryAfter('c', lockedAt + 59_000), 1);
    assert.equal(l.retryAfter('c', lockedAt + 59_999), 1); // 1 ms left → 1, never 0
    assert.equal(l.retryAfter('c', lockedAt + 60_000), 0); // lockout over
    assert.equal(l.retryAfter('c', lockedAt + 120_000), 0);
  });

  it('starts counting afresh once the lockout is over', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    failMany(l, 'c', 20);
    const after = T0 + 190 + 60_000;
    assert.deepEqual(failMany(l, 'c', 19, after), Array(19).fill(0));
    assert.equal(l.fail('c', after + 190), 60);
  });

  it('does not count failures that fell out of the window', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    failMany(l, 'c', 19, T0, 0); // 19 failures at T0
    // 60 s later the T0 failures are outside the 60 s window: one more failure does not lock
    assert.equal(l.fail('c', T0 + 60_000), 0);
    assert.equal(l.retryAfter('c', T0 + 60_000), 0);
    // ...but 19 more inside the new window do (20 within 60 s)
    assert.deepEqual(failMany(l, 'c', 18, T0 + 60_001, 1), Array(18).fill(0));
    assert.equal(l.fail('c', T0 + 60_100), 60);
  });

  it('never locks a client failing more slowly than maxFailures per window', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    // one failure every 4 s: at most 15 in any 60 s window
    const answers = failMany(l, 'slow', 200, T0, 4000);
    assert.ok(answers.every((a) => a === 0));
    assert.equal(l.retryAfter('slow', T0 + 200 * 4000), 0);
  });

  it('resets a client on success', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    failMany(l, 'c', 19);
    l.reset('c');
    assert.deepEqual(failMany(l, 'c', 19, T0 + 1000), Array(19).fill(0));
    assert.equal(l.retryAfter('c', T0 + 2000), 0);
    l.reset('never-seen'); // harmless
  });

  it('tracks clients independently', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    failMany(l, 'a', 20);
    assert.ok(l.retryAfter('a', T0 + 500) > 0);
    assert.equal(l.retryAfter('b', T0 + 500), 0);
    assert.equal(l.fail('b', T0 + 500), 0);
  });

  it('bounds its memory: 10 000 distinct clients never make it track more than maxTrackedClients', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    let max = 0;
    for (let i = 0; i < 10_000; i++) {
      l.fail(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, T0 + i);
      max = Math.max(max, l.size);
    }
    assert.equal(max, 100);
    assert.equal(l.size, 100);
  });

  it('evicts unlocked entries before locked ones', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    const locked = ['l1', 'l2', 'l3', 'l4', 'l5'];
    for (const c of locked) failMany(l, c, 20);
    const now = T0 + 1000;
    for (let i = 0; i < 10_000; i++) l.fail(`flood-${i}`, now + (i % 50));
    assert.ok(l.size <= 100);
    for (const c of locked) assert.ok(l.retryAfter(c, now + 100) > 0, `${c} lost its lockout to the flood`);
    // the flood's recent entries are tracked, the early ones are gone
    assert.equal(l.fail('flood-9999', now + 100), 0);
  });

  it('evicts the oldest lock only when every tracked entry is locked', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    for (let i = 0; i < 100; i++) failMany(l, `c${i}`, 20, T0 + i * 1000, 1);
    assert.equal(l.size, 100);
    // c<i> is locked until T0 + i s + 60.019 s: at `now`, c0..c39 are unlocked again, c40..c99 still locked
    const now = T0 + 100_000;
    assert.equal(l.retryAfter('c39', now), 0);
    for (let i = 40; i < 100; i++) assert.ok(l.retryAfter(`c${i}`, now) > 0);
    for (let i = 0; i < 40; i++) l.fail(`newcomer${i}`, now);
    assert.equal(l.size, 100);
    for (let i = 40; i < 100; i++)
      assert.ok(l.retryAfter(`c${i}`, now) > 0, `c${i} was evicted before an unlocked entry`);

    // all locked: the oldest lock is the one that goes
    const m = new AuthFailureLimiter({ ...LIMITS });
    for (let i = 0; i < 100; i++) failMany(m, `c${i}`, 20, T0 + i, 0);
    const t = T0 + 200;
    for (let i = 0; i < 100; i++) assert.ok(m.retryAfter(`c${i}`, t) > 0);
    m.fail('newcomer', t);
    assert.equal(m.size, 100);
    assert.equal(m.retryAfter('c0', t), 0);
    assert.ok(m.retryAfter('c1', t) > 0);
    assert.ok(m.retryAfter('c99', t) > 0);
  });

  it('setLimits applies new limits to later failures', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    l.setLimits({ maxFailures: 3, windowSeconds: 10, lockoutSeconds: 5, maxTrackedClients: 100 });
    assert.deepEqual(failMany(l, 'c', 2), [0, 0]);
    assert.equal(l.fail('c', T0 + 20), 5);
    assert.equal(l.retryAfter('c', T0 + 20), 5);
    assert.equal(l.retryAfter('c', T0 + 5020), 0);
    // the shorter window applies too: failures 10 s apart never add up
    assert.deepEqual(failMany(l, 'd', 10, T0, 10_000), Array(10).fill(0));
  });

  it('setLimits with a smaller maxTrackedClients brings the size down to the new bound', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    for (let i = 0; i < 100; i++) l.fail(`c${i}`, T0 + i);
    l.setLimits({ ...LIMITS, maxTrackedClients: 10 });
    for (let i = 0; i < 100; i++) l.fail(`n${i}`, T0 + 1000 + i);
    assert.ok(l.size <= 10, `size ${l.size} after shrinking maxTrackedClients to 10`);
  });

  it('counts IPv6 clients by /64: another address of the same network is locked too, another network is not', () => {
    const l = new AuthFailureLimiter({ ...LIMITS });
    for (let i = 0; i < 20; i++) l.fail(`2001:db8::${(i + 1).toString(16)}`, T0 + i);
    assert.equal(l.retryAfter('2001:db8::ffff', T0 + 100), 60);
    assert.equal(l.retryAfter('2001:db8:0:0:1:2:3:4', T0 + 100), 60);
    assert.equal(l.retryAfter('2001:db8:0:1::1', T0 + 100), 0);
    assert.equal(l.size, 1);
    l.reset('2001:db8::abcd');
    assert.equal(l.retryAfter('2001:db8::1', T0 + 100), 0);
  });

  it('tells every onLocked listener once per lockout (the audit trail and lockout sharing), with the limits; a removed one no more', () => {
    const l = new AuthFailureLimiter({ ...LIMITS, maxFailures: 3 });
    const a: unknown[] = [];
    const b: unknown[] = [];
    l.onLocked((bucket, until, why) => a.push([bucket, until, why]));
    const stopB = l.onLocked((bucket) => b.push(bucket));
    failMany(l, '2001:db8::7', 3);
    assert.deepEqual(a, [['2001:db8::/64', T0 + 20 + 60_000, { failures: 3, windowSeconds: 60, lockoutSeconds: 60 }]]);
    assert.deepEqual(b, ['2001:db8::/64']);
    stopB();
    failMany(l, '9.9.9.9', 3);
    assert.equal(a.length, 2);
    assert.equal(b.length, 1);
  });
});
