/** createObservability: the live feed's replay buffer only where a reader can use it. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createObservability } from '../../src/admin/observe.js';
import { FEED_CAPACITY, type FeedEvent } from '../../src/feed.js';
import { captureLogger } from '../support/log-capture.js';

const event = (n: number): FeedEvent => ({
  type: 'run',
  at: n,
  runId: `r${n}`,
  state: 'succeeded',
  sessionKey: 's',
  hookName: 'h',
  label: 'h',
  error: null,
});

describe('createObservability', () => {
  it('keeps 4,096 events for Last-Event-ID when the admin listener runs, one when there is none (peak RSS)', () => {
    const { logger } = captureLogger();
    const withAdmin = createObservability({ logger, replay: true });
    const without = createObservability({ logger, replay: false });
    try {
      assert.equal(withAdmin.feed.capacity, FEED_CAPACITY);
      assert.equal(without.feed.capacity, 1);
      const seen: number[] = [];
      without.feed.subscribe((_e, seq) => seen.push(seq));
      for (let i = 1; i <= 3; i++) without.feed.publish(event(i));
      assert.deepEqual(seen, [1, 2, 3], 'subscribers (the metrics) still see every event');
      assert.equal(without.feed.at(2), undefined);
      assert.ok(without.feed.at(3));
    } finally {
      withAdmin.stop();
      without.stop();
    }
  });
});
