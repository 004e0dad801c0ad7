import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { shareFeed } from '../../src/admin/feed-cluster.js';
import { FeedBus, type FeedEvent } from '../../src/feed.js';
import { feedNoticePayload } from '../../src/store/postgres-notices.js';
import { type ClusterNotice, FEED_NOTICE_MAX_BYTES } from '../../src/store/types.js';
import { captureLogger } from '../support/log-capture.js';
import { waitFor } from '../support/wait.js';

const run = (runId: string): FeedEvent => ({
  type: 'run',
  at: 1,
  runId,
  state: 'queued',
  sessionKey: 'hook:x',
  hookName: 'agent',
  label: 'agent',
  error: 'e'.repeat(200),
});

function fakeStore(shared = true) {
  const sent: string[] = [];
  const listeners = new Set<(n: ClusterNotice) => void>();
  return {
    sent,
    notify: (n: ClusterNotice) => {
      for (const l of listeners) l(n);
    },
    store: {
      shared,
      async publishFeed(node: string, events: readonly string[]) {
        sent.push(feedNoticePayload(node, events));
      },
      subscribe(l: (n: ClusterNotice) => void) {
        listeners.add(l);
        return () => void listeners.delete(l);
      },
    },
  };
}

describe('the live feed across nodes (shareFeed)', () => {
  it('sends this node’s events in batches, each NOTIFY under the size limit, none lost', async () => {
    const bus = new FeedBus(1024, 'node-a');
    const { store, sent } = fakeStore();
    const stop = shareFeed(bus, store, 'node-a', captureLogger().logger, { flushMs: 5 });
    for (let i = 0; i < 200; i++) bus.publish(run(`r${i}`));
    await waitFor(
      'every event sent',
      () => sent.flatMap((p) => (JSON.parse(p) as { events: unknown[] }).events).length === 200,
    );
    assert.ok(sent.length > 1 && sent.length < 20, `batched: ${sent.length} notifies`);
    for (const p of sent) assert.ok(Buffer.byteLength(p) < FEED_NOTICE_MAX_BYTES, `${Buffer.byteLength(p)} bytes`);
    const ids = sent.flatMap((p) => (JSON.parse(p) as { events: Array<{ runId: string }> }).events.map((e) => e.runId));
    assert.deepEqual(
      ids,
      Array.from({ length: 200 }, (_, i) => `r${i}`),
      'in order',
    );
    stop();
  });

  it('re-emits other nodes’ events with their origin, ignores its own notices, and never sends them on', async () => {
    const bus = new FeedBus(16, 'node-a');
    const { store, sent, notify } = fakeStore();
    const stop = shareFeed(bus, store, 'node-a', captureLogger().logger, { flushMs: 5 });
    notify({ kind: 'feed', node: 'node-b', events: [run('from-b')] });
    notify({ kind: 'feed', node: 'node-a', events: [run('own')] });
    assert.equal(bus.last, 1);
    assert.match(bus.frame(1)!, /"runId":"from-b".*"node":"node-b"/);
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(sent, []);
    stop();
  });

  it('does nothing on a single-process store', () => {
    const bus = new FeedBus(4);
    const { store } = fakeStore(false);
    shareFeed(bus, store, 'n', captureLogger().logger)();
    assert.equal(bus.subscribers, 0);
  });
});
