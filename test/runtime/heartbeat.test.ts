import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { heartbeatRetryDelayMs } from '../../src/runtime/heartbeat.js';

describe('heartbeat retry delay', () => {
  it('starts at 5 s, doubles, stops at 5 min, with the same equal jitter as the outbox and providers', () => {
    const low = () => 0;
    const high = () => 0.999999;
    assert.equal(heartbeatRetryDelayMs(1, high), 5000);
    assert.equal(heartbeatRetryDelayMs(1, low), 2500);
    assert.equal(heartbeatRetryDelayMs(2, high), 10_000);
    assert.equal(heartbeatRetryDelayMs(2, low), 5000);
    assert.equal(heartbeatRetryDelayMs(7, high), 300_000, '5 s × 2^6 = 320 s: capped at 5 min');
    assert.equal(heartbeatRetryDelayMs(7, low), 150_000);
    assert.equal(heartbeatRetryDelayMs(100, high), 300_000);
  });

  it('is jittered: failed heartbeats of several nodes do not retry in lockstep', () => {
    const delays = new Set(Array.from({ length: 50 }, () => heartbeatRetryDelayMs(3)));
    assert.ok(delays.size > 1, 'the same delay every time');
    for (const d of delays) assert.ok(d >= 10_000 && d <= 20_000, `${d} ms`);
  });
});
