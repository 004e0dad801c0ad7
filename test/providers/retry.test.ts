import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffMs } from '../../src/backoff.js';
import { type AbortLike, whenAborted } from '../../src/deadline.js';
import { retryWaitMs, withRetry } from '../../src/providers/retry.js';
import { ProviderError } from '../../src/providers/types.js';

const transient = (retryAfterMs?: number) =>
  new ProviderError('provider_http', 'HTTP 503', {
    retryable: true,
    status: 503,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
const permanent = () => new ProviderError('provider_http', 'HTTP 400', { retryable: false, status: 400 });
const signal = () => new AbortController().signal;
const fast = { baseDelayMs: 1, maxDelayMs: 4 };

describe('withRetry', () => {
  it('retries retryable errors up to maxAttempts, then throws the last one', async () => {
    let calls = 0;
    await assert.rejects(
      withRetry('t', { maxAttempts: 4, ...fast }, signal(), async () => {
        calls++;
        throw transient();
      }),
      { code: 'provider_http', status: 503 },
    );
    assert.equal(calls, 4);
  });

  it('returns the first success', async () => {
    let calls = 0;
    const v = await withRetry('t', { maxAttempts: 5, ...fast }, signal(), async (_s, n) => {
      calls++;
      if (n < 3) throw transient();
      return n;
    });
    assert.equal(v, 3);
    assert.equal(calls, 3);
  });

  it('stops at once on a non-retryable error, and rethrows foreign errors unchanged', async () => {
    let calls = 0;
    await assert.rejects(
      withRetry('t', { maxAttempts: 5, ...fast }, signal(), async () => {
        calls++;
        throw permanent();
      }),
      { status: 400 },
    );
    assert.equal(calls, 1);
    const bug = new TypeError('bug');
    await assert.rejects(
      withRetry('t', { maxAttempts: 5 }, signal(), async () => Promise.reject(bug)),
      (e) => e === bug,
    );
  });

  it('waits retryAfterMs before the next attempt', async () => {
    const times: number[] = [];
    await withRetry('t', { maxAttempts: 2, ...fast }, signal(), async (_s, n) => {
      times.push(Date.now());
      if (n === 1) throw transient(250);
    });
    const gap = times[1]! - times[0]!;
    assert.ok(gap >= 240 && gap < 1000, `gap ${gap}`);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs: the error is thrown with it', async () => {
    let calls = 0;
    const t0 = Date.now();
    await assert.rejects(
      withRetry('t', { maxAttempts: 3, maxRetryAfterMs: 1000 }, signal(), async () => {
        calls++;
        throw transient(120_000);
      }),
      { retryAfterMs: 120_000 },
    );
    assert.equal(calls, 1);
    assert.ok(Date.now() - t0 < 500);
  });

  it('an abort during the backoff stops at once with a non-retryable provider_timeout', async () => {
    const ctrl = new AbortController();
    let calls = 0;
    setTimeout(() => ctrl.abort(), 50);
    const t0 = Date.now();
    await assert.rejects(
      withRetry('t', { maxAttempts: 5, baseDelayMs: 10_000 }, ctrl.signal, async () => {
        calls++;
        throw transient();
      }),
      { code: 'provider_timeout', retryable: false },
    );
    assert.equal(calls, 1);
    assert.ok(Date.now() - t0 < 1000);
  });

  it('the run abort wins over the error an attempt reports', async () => {
    const ctrl = new AbortController();
    await assert.rejects(
      withRetry('t', { maxAttempts: 3, ...fast }, ctrl.signal, async () => {
        ctrl.abort();
        throw new ProviderError('provider_unreachable', 'reset', { retryable: true });
      }),
      { code: 'provider_timeout', retryable: false },
    );
  });

  it('requestTimeoutMs aborts the attempt signal; the timeout is retried unless retryAttemptTimeout is false', async () => {
    const hang = (s: AbortLike) =>
      new Promise<never>((_r, reject) => whenAborted(s, () => reject(new Error('aborted'))));
    let calls = 0;
    await assert.rejects(
      withRetry('t', { maxAttempts: 2, requestTimeoutMs: 30, ...fast }, signal(), (s) => {
        calls++;
        return hang(s);
      }),
      { code: 'provider_timeout', retryable: true },
    );
    assert.equal(calls, 2);
    calls = 0;
    await assert.rejects(
      withRetry('t', { maxAttempts: 2, requestTimeoutMs: 30, retryAttemptTimeout: false }, signal(), (s) => {
        calls++;
        return hang(s);
      }),
      { code: 'provider_timeout', retryable: false },
    );
    assert.equal(calls, 1);
  });

  it('does not leave listeners on the run signal', async () => {
    const ctrl = new AbortController();
    let added = 0;
    let removed = 0;
    const add = ctrl.signal.addEventListener.bind(ctrl.signal);
    const remove = ctrl.signal.removeEventListener.bind(ctrl.signal);
    ctrl.signal.addEventListener = ((...a: Parameters<typeof add>) => (added++, add(...a))) as typeof add;
    ctrl.signal.removeEventListener = ((...a: Parameters<typeof remove>) => (removed++, remove(...a))) as typeof remove;
    await withRetry('t', { maxAttempts: 3, ...fast }, ctrl.signal, async (_s, n) => {
      if (n < 3) throw transient();
    });
    assert.ok(added > 0);
    assert.equal(removed, added);
  });
});

describe('backoffMs (shared by providers, outbox and heartbeat)', () => {
  it('grows exponentially with equal jitter, capped', () => {
    const p = { baseDelayMs: 100, maxDelayMs: 1000 };
    assert.equal(
      backoffMs(1, p, () => 0),
      50,
    );
    assert.equal(
      backoffMs(1, p, () => 0.999999),
      100,
    );
    assert.equal(
      backoffMs(3, p, () => 0),
      200,
    );
    assert.equal(
      backoffMs(10, p, () => 0.999999),
      1000,
    );
    assert.equal(
      backoffMs(10, p, () => 0),
      500,
    );
    assert.equal(
      backoffMs(5000, p, () => 0.999999),
      1000,
      '2^4999 overflows to Infinity: still capped',
    );
  });
});

describe("retryWaitMs (the providers' rule)", () => {
  it('uses the default backoff without a Retry-After', () => {
    assert.equal(
      retryWaitMs(1, undefined, {}, () => 0),
      250,
    );
    assert.equal(
      retryWaitMs(20, undefined, {}, () => 0.999999),
      10_000,
    );
  });
  it('uses retryAfterMs exactly, or gives up beyond maxRetryAfterMs', () => {
    assert.equal(retryWaitMs(1, 1234, {}), 1234);
    assert.equal(retryWaitMs(1, 61_000, {}), undefined);
    assert.equal(retryWaitMs(1, 5000, { maxRetryAfterMs: 4000 }), undefined);
  });
});
