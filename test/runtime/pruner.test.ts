import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { KEEP_SESSION_TURNS, PRUNE_EVERY_MS, startPruner } from '../../src/runtime/pruner.js';
import { NOTHING_EXPIRED } from '../../src/store/retention.js';
import type { ExpiredPruned, FinishedWorkPolicy, FinishedWorkPruned } from '../../src/store/types.js';
import { captureLogger } from '../support/log-capture.js';
import { waitFor } from '../support/wait.js';

const DAY = 86_400_000;
const NONE: FinishedWorkPruned = {
  runs: 0,
  deliveries: 0,
  events: 0,
  messages: 0,
  steps: 4,
  longestStepMs: 1,
  longestHeldMs: 1,
};

function fakeStore(pruneFinished: (before: number, policy: FinishedWorkPolicy) => Promise<FinishedWorkPruned>) {
  const calls: Array<[string, number]> = [];
  const store = {
    async prune(now: number, receivedBefore: number) {
      calls.push(['received', now - receivedBefore]);
      return NOTHING_EXPIRED;
    },
    async pruneAudit(before: number) {
      calls.push(['audit', Date.now() - before]);
      return 0;
    },
    pruneFinished(before: number, policy: FinishedWorkPolicy) {
      calls.push(['finished', Date.now() - before]);
      return pruneFinished(before, policy);
    },
    async recoverLeases() {
      return 0;
    },
    async close() {},
  };
  return { store, calls };
}

describe('pruner', () => {
  it('prunes received records, audit records and finished work each by its own retention (days, read at each prune)', async () => {
    const policies: FinishedWorkPolicy[] = [];
    const { store, calls } = fakeStore(async (_b, p) => (policies.push(p), NONE));
    const stop = startPruner(store, captureLogger().logger, { received: () => 7, audit: () => 90, runs: () => 30 });
    stop();
    await waitFor('the three prunes', () => calls.length === 3 || undefined);
    assert.deepEqual(
      calls.map((c) => c[0]),
      ['received', 'audit', 'finished'],
    );
    assert.equal(calls[0]![1], 7 * DAY);
    assert.ok(Math.abs(calls[1]![1] - 90 * DAY) < 1000);
    assert.ok(Math.abs(calls[2]![1] - 30 * DAY) < 1000);
    // Every session keeps at least the turns a prompt reads back (the run worker's 40, the heartbeat's 20).
    assert.equal(policies[0]!.keepMessages, KEEP_SESSION_TURNS);
    assert.equal(KEEP_SESSION_TURNS, 40);
    // The stop aborts a prune under way: no further step starts.
    assert.equal(policies[0]!.signal?.aborted, true);
  });

  it('every ten minutes; a tick while finished work is still being deleted starts no second pass; a reload applies at the next tick', async () => {
    mock.timers.enable({ apis: ['setInterval'] });
    try {
      let release: (() => void) | undefined;
      const { store, calls } = fakeStore(
        () => new Promise((resolve) => (release = () => resolve({ ...NONE, runs: 1, steps: 9 }))),
      );
      let days = 7;
      const { lines, logger } = captureLogger();
      const stop = startPruner(store, logger, { received: () => 7, audit: () => 90, runs: () => days });
      const finished = () => calls.filter((c) => c[0] === 'finished');
      assert.equal(finished().length, 1, 'one pass at start');
      days = 3;
      await new Promise((resolve) => setImmediate(resolve)); // the first expiry prune (resolved at once) ends
      mock.timers.tick(PRUNE_EVERY_MS);
      assert.equal(calls.filter((c) => c[0] === 'received').length, 2, 'the other prunes run at each tick');
      assert.equal(finished().length, 1, 'the pass under way is not doubled');
      release!();
      await waitFor('the pass logged', () => lines.some((l) => l.msg === 'pruned finished work') || undefined);
      mock.timers.tick(PRUNE_EVERY_MS);
      assert.equal(finished().length, 2, 'the next tick after it ends starts one');
      assert.ok(Math.abs(finished()[1]![1] - 3 * DAY) < 1000, 'with the retention read then');
      release!();
      stop();
    } finally {
      mock.timers.reset();
    }
  });

  it('a tick while expired records are still being deleted starts no second prune of them; a stop aborts it', async () => {
    mock.timers.enable({ apis: ['setInterval'] });
    try {
      const signals: Array<AbortSignal | undefined> = [];
      let release: (() => void) | undefined;
      const store = {
        prune: (_now: number, _before: number, signal?: AbortSignal) => {
          signals.push(signal);
          return new Promise<ExpiredPruned>(
            (resolve) => (release = () => resolve({ ...NOTHING_EXPIRED, idempotency: 1, received: 2, steps: 3 })),
          );
        },
        pruneAudit: async () => 0,
        pruneFinished: async () => NONE,
        recoverLeases: async () => 0,
        close: async () => {},
      };
      const { lines, logger } = captureLogger('debug');
      const stop = startPruner(store, logger, { received: () => 7, audit: () => 90, runs: () => 7 });
      mock.timers.tick(PRUNE_EVERY_MS);
      assert.equal(signals.length, 1, 'the prune under way is not doubled');
      release!();
      await waitFor('the prune logged', () => lines.some((l) => l.msg === 'pruned expired records') || undefined);
      mock.timers.tick(PRUNE_EVERY_MS);
      assert.equal(signals.length, 2, 'the next tick after it ends starts one');
      stop();
      assert.equal(signals[1]?.aborted, true, 'a stop aborts the prune under way');
      release!();
    } finally {
      mock.timers.reset();
    }
  });

  it('a failed prune is logged, not thrown, and the next tick tries again', async () => {
    const { lines, logger } = captureLogger();
    const store = {
      prune: async () => NOTHING_EXPIRED,
      pruneAudit: async () => Promise.reject(new Error('store down')),
      pruneFinished: async () => Promise.reject(new Error('store gone')),
      recoverLeases: async () => 0,
      close: async () => {},
    };
    startPruner(store, logger, { received: () => 7, audit: () => 90, runs: () => 7 })();
    await waitFor(
      'the warnings',
      () =>
        (lines.some((l) => l.msg === 'prune of audit records failed' && l.err === 'store down') &&
          lines.some((l) => l.msg === 'prune of finished work failed' && l.err === 'store gone')) ||
        undefined,
    );
  });
});
