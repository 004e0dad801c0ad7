import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FEED_START_SEND_MS, shareFeed } from '../../src/admin/feed-cluster.js';
import { FeedBus, type FeedEvent } from '../../src/feed.js';
import { feedNoticePayload } from '../../src/store/postgres-notices.js';
import { type ClusterNotice, FEED_NOTICE_MAX_BYTES } from '../../src/store/types.js';
import { captureLogger } from '../support/log-capture.js';
import { waitFor } from '../support/wait.js';

const received = (status: number): FeedEvent => ({
  type: 'received',
  at: 1,
  path: 'wake',
  route: 'wake',
  status,
  code: status === 200 ? null : 'unauthorized',
  clientIp: '127.0.0.1',
  eventIds: [],
  runIds: [],
  durationMs: 1,
});
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
      async publishFeed(node: string, events: readonly string[], watchMs?: number) {
        sent.push(feedNoticePayload(node, events, watchMs));
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

  it('once no node has asked for its events, sends only refusals; a request resumes the rest for 3 announcements', async () => {
    let clock = 1_000;
    const bus = new FeedBus(64, 'node-a');
    const { store, sent, notify } = fakeStore();
    const stop = shareFeed(bus, store, 'node-a', captureLogger().logger, {
      flushMs: 1,
      announceMs: 10,
      now: () => clock,
      helloDelayMs: 60_000,
    });
    bus.publish(run('at-start')); // a node that just started sends: it has not heard yet
    await waitFor('sent', () => sent.length === 1);
    clock += FEED_START_SEND_MS;
    bus.publish(run('unread'));
    bus.publish(received(200));
    bus.publish(received(401));
    await waitFor('the refusal sent', () => sent.length === 2);
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(
      (JSON.parse(sent[1]!) as { events: FeedEvent[] }).events.map((e) => e.type === 'received' && e.status),
      [401],
      'only the refusal',
    );
    notify({ kind: 'feed', node: 'node-b', events: [], watchMs: 30 });
    assert.equal(bus.last, 4, 'a request carries no event');
    bus.publish(run('read'));
    await waitFor('sent again', () => sent.length === 3);
    assert.match(sent[2]!, /"runId":"read"/);
    clock += 30;
    bus.publish(run('unread again'));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(sent.length, 3, 'the request has lapsed');
    stop();
  });

  it('a node that starts asks who reads; a node whose feed has readers answers by asking', async () => {
    const a = fakeStore();
    const stopA = shareFeed(new FeedBus(8, 'node-a'), a.store, 'node-a', captureLogger().logger, { helloDelayMs: 1 });
    await waitFor('hello sent', () => a.sent.some((p) => (JSON.parse(p) as { watchMs?: number }).watchMs === 0));
    const busB = new FeedBus(8, 'node-b');
    const b = fakeStore();
    const stopB = shareFeed(busB, b.store, 'node-b', captureLogger().logger, { helloDelayMs: 60_000 });
    b.notify({ kind: 'feed', node: 'node-a', events: [], watchMs: 0 });
    assert.equal(b.sent.length, 0, 'no readers: no answer');
    busB.addReaders(1);
    b.notify({ kind: 'feed', node: 'node-a', events: [], watchMs: 0 });
    assert.equal(
      b.sent.filter((p) => (JSON.parse(p) as { watchMs?: number }).watchMs! > 0).length,
      2,
      'asked when its reader came, and again on the hello',
    );
    stopA();
    stopB();
  });

  it('asks the others while its feed has readers and for the grace after; then a resume from before it stopped is a gap', async () => {
    const bus = new FeedBus(64, 'node-a');
    const { store, sent } = fakeStore();
    const stop = shareFeed(bus, store, 'node-a', captureLogger().logger, {
      flushMs: 1,
      announceMs: 5,
      graceMs: 40,
      helloDelayMs: 60_000,
    });
    const asks = () => sent.filter((p) => (JSON.parse(p) as { watchMs?: number }).watchMs === 15).length;
    assert.equal(asks(), 0, 'nobody reads: nobody asked');
    bus.addReaders(1);
    assert.equal(asks(), 1, 'asked at once');
    bus.publish(run('seen'));
    const seen = bus.idOf(bus.last);
    await waitFor('asked again', () => asks() >= 3);
    assert.equal(bus.position(seen).kind, 'resume');
    bus.addReaders(-1);
    await waitFor('stopped asking after the grace', () => bus.position(seen).kind === 'reset');
    assert.deepEqual(bus.position(seen), { kind: 'reset', reason: 'gap', next: bus.last + 1 });
    const n = asks();
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(asks(), n, 'no more requests');
    bus.addReaders(1);
    assert.equal(asks(), n + 1, 'a new reader asks again at once');
    stop();
  });

  it('does nothing on a single-process store', () => {
    const bus = new FeedBus(4);
    const { store } = fakeStore(false);
    shareFeed(bus, store, 'n', captureLogger().logger)();
    assert.equal(bus.subscribers, 0);
  });
});
