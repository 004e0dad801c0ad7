import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FeedBus, type FeedEvent, receivedJson } from '../src/feed.js';

const hb = (n: number): FeedEvent => ({
  type: 'heartbeat',
  at: n,
  sessionKey: 'agent:main:main',
  outcome: 'ok',
  events: n,
});

describe('FeedBus (the live feed ring buffer)', () => {
  it('numbers events 1, 2, 3… and keeps the last `capacity` of them', () => {
    const bus = new FeedBus(4);
    for (let i = 1; i <= 6; i++) bus.publish(hb(i));
    assert.equal(bus.last, 6);
    assert.equal(bus.oldest, 3);
    assert.equal(bus.at(2), undefined, 'left the buffer');
    assert.equal((bus.at(3) as { events: number }).events, 3);
    assert.equal((bus.at(6) as { events: number }).events, 6);
    assert.equal(bus.at(7), undefined);
  });

  it('a frame is an SSE frame with the id, the type and the JSON data', () => {
    const bus = new FeedBus(8);
    bus.publish(hb(1));
    const frame = bus.frame(1)!;
    assert.equal(frame, `id: ${bus.epoch}-1\nevent: heartbeat\ndata: ${JSON.stringify(hb(1))}\n\n`);
    assert.equal(bus.frame(1), frame);
  });

  it('on a shared store each event carries its node: this one, or the origin of a re-emitted event', () => {
    const bus = new FeedBus(8, 'node-a');
    bus.publish(hb(1));
    bus.publish(hb(2), 'node-b');
    assert.match(bus.frame(1)!, /"node":"node-a"/);
    assert.match(bus.frame(2)!, /"node":"node-b"/);
  });

  it('Last-Event-ID: resumes after a buffered id; resets for an id older than the buffer, of another process, or malformed', () => {
    const bus = new FeedBus(4);
    for (let i = 1; i <= 6; i++) bus.publish(hb(i));
    assert.deepEqual(bus.position(undefined), { kind: 'resume', next: 7 });
    assert.deepEqual(bus.position(bus.idOf(4)), { kind: 'resume', next: 5 });
    assert.deepEqual(
      bus.position(bus.idOf(2)),
      { kind: 'resume', next: 3 },
      'the next one (3) is still buffered: nothing lost',
    );
    assert.deepEqual(bus.position(bus.idOf(1)), { kind: 'reset', reason: 'gap', next: 7 });
    assert.deepEqual(bus.position(bus.idOf(6)), { kind: 'resume', next: 7 });
    assert.deepEqual(
      bus.position('0badcafe-3'),
      { kind: 'reset', reason: 'unknown_id', next: 7 },
      "another node's (or an earlier process's) id",
    );
    assert.deepEqual(
      bus.position(bus.idOf(9)),
      { kind: 'reset', reason: 'unknown_id', next: 7 },
      'an id not given out yet',
    );
    for (const bad of ['x', '-', `${bus.epoch}-`, `${bus.epoch}-1.5`, `${bus.epoch}--1`])
      assert.equal(bus.position(bad).kind, 'reset', bad);
    assert.notEqual(new FeedBus(4).epoch, bus.epoch, 'every process its own epoch');
  });

  it('subscribers get each event with its sequence number and origin; a throwing subscriber harms nobody', () => {
    const bus = new FeedBus(4);
    const seen: Array<[number, string | null]> = [];
    bus.subscribe(() => {
      throw new Error('boom');
    });
    const stop = bus.subscribe((_e, seq, origin) => seen.push([seq, origin]));
    bus.publish(hb(1));
    bus.publish(hb(2), 'node-b');
    stop();
    bus.publish(hb(3));
    assert.deepEqual(seen, [
      [1, null],
      [2, 'node-b'],
    ]);
    assert.equal(bus.subscribers, 1);
  });

  it('a received frame made by hand is the JSON.stringify of the event (random events, with and without a node)', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 });
    const received = fc.record(
      {
        type: fc.constant('received' as const),
        at: fc.integer({ min: 0, max: 2 ** 53 - 1 }),
        path: text,
        route: text,
        status: fc.integer({ min: 100, max: 599 }),
        code: fc.option(text, { nil: null }),
        clientIp: text,
        eventIds: fc.array(text, { maxLength: 4 }),
        runIds: fc.array(text, { maxLength: 4 }),
        omittedIds: fc.integer({ min: 1, max: 1000 }),
        durationMs: fc.double({ noNaN: false }),
        reqId: text,
      },
      {
        requiredKeys: ['type', 'at', 'path', 'route', 'status', 'code', 'clientIp', 'eventIds', 'runIds', 'durationMs'],
      },
    );
    fc.assert(
      fc.property(received, fc.option(text, { nil: undefined }), (event, node) => {
        assert.equal(receivedJson(event, node), JSON.stringify(node === undefined ? event : { ...event, node }));
      }),
      { numRuns: 2000 },
    );
  });
});
