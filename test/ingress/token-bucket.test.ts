import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBucket } from '../../src/ingress/token-bucket.js';

describe('TokenBucket (injected clock)', () => {
  it('starts full: burst requests at once, then refused with the seconds until the next token', () => {
    const b = new TokenBucket({ perMinute: 60, burst: 3 }, 0);
    assert.deepEqual([b.take(0), b.take(0), b.take(0)], [0, 0, 0]);
    assert.equal(b.take(0), 1);
    assert.equal(b.take(999), 1); // 0.999 of a token: still refused, Retry-After rounds up
    assert.equal(b.take(1000), 0);
    assert.equal(b.take(1000), 1);
  });
  it('Retry-After is rounded up to whole seconds, at least 1', () => {
    const b = new TokenBucket({ perMinute: 6, burst: 1 }, 0); // a token each 10 s
    assert.equal(b.take(0), 0);
    assert.equal(b.take(0), 10);
    assert.equal(b.take(2500), 8); // 7.5 s left
    assert.equal(b.take(9999), 1);
    const slow = new TokenBucket({ perMinute: 0.5, burst: 1 }, 0);
    slow.take(0);
    assert.equal(slow.take(0), 120);
  });
  it('refills continuously up to burst, never beyond', () => {
    const b = new TokenBucket({ perMinute: 120, burst: 5 }, 0);
    for (let i = 0; i < 5; i++) b.take(0);
    assert.equal(b.available(1000), 2);
    assert.equal(b.available(60_000), 5);
    assert.equal(b.available(3_600_000), 5);
  });
  it('peek does not take', () => {
    const b = new TokenBucket({ perMinute: 60, burst: 1 }, 0);
    assert.equal(b.peek(0), 0);
    assert.equal(b.peek(0), 0);
    assert.equal(b.take(0), 0);
    assert.equal(b.peek(0), 1);
  });
  it('a clock that goes back neither refills nor drains', () => {
    const b = new TokenBucket({ perMinute: 60, burst: 2 }, 10_000);
    b.take(10_000);
    b.take(10_000);
    assert.equal(b.take(5_000), 1);
    assert.equal(b.available(10_500), 0.5);
  });
});
