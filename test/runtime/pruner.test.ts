import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startPruner } from '../../src/runtime/pruner.js';
import { captureLogger } from '../support/log-capture.js';
import { waitFor } from '../support/wait.js';

describe('pruner', () => {
  it('prunes received records and audit records each by its own retention (days, read at each prune)', async () => {
    const calls: Array<[string, number]> = [];
    const store = {
      async prune(now: number, receivedBefore: number) {
        calls.push(['received', now - receivedBefore]);
        return { idempotency: 0, received: 0 };
      },
      async pruneAudit(before: number) {
        calls.push(['audit', Date.now() - before]);
        return 0;
      },
      async recoverLeases() {
        return 0;
      },
      async close() {},
    };
    const stop = startPruner(store, captureLogger().logger, { received: () => 7, audit: () => 90 });
    stop();
    await waitFor('both prunes', () => calls.length === 2 || undefined);
    const day = 86_400_000;
    assert.equal(calls[0]![0], 'received');
    assert.equal(calls[0]![1], 7 * day);
    assert.equal(calls[1]![0], 'audit');
    assert.ok(Math.abs(calls[1]![1] - 90 * day) < 1000);
  });

  it('a failed audit prune is logged, not thrown', async () => {
    const { lines, logger } = captureLogger();
    const store = {
      prune: async () => ({ idempotency: 0, received: 0 }),
      pruneAudit: async () => Promise.reject(new Error('store down')),
      recoverLeases: async () => 0,
      close: async () => {},
    };
    startPruner(store, logger, { received: () => 7, audit: () => 90 })();
    await waitFor(
      'the warning',
      () => lines.some((l) => l.msg === 'prune of audit records failed' && l.err === 'store down') || undefined,
    );
  });
});
