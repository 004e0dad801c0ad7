import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventLine } from '../../src/cli/tail.js';

describe('hookgate tail: one line per event', () => {
  it('says what changed, with its ids, made safe for a terminal', () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
    assert.equal(
      eventLine({
        type: 'received',
        at,
        path: 'wake',
        route: 'wake',
        status: 200,
        code: null,
        clientIp: '127.0.0.1',
        eventIds: ['e1'],
        runIds: [],
        durationMs: 1.6,
      }),
      '03:04:05.006 received  200 /wake (wake) 2 ms from 127.0.0.1: event e1',
    );
    assert.equal(
      eventLine({
        type: 'received',
        at,
        path: 'x\u001b[31m',
        route: 'other',
        status: 401,
        code: 'unauthorized',
        clientIp: '10.0.0.9',
        eventIds: [],
        runIds: [],
        durationMs: 0.2,
      }).includes('\u001b'),
      false,
    );
    assert.equal(
      eventLine({
        type: 'run',
        at,
        runId: 'r1',
        state: 'succeeded',
        sessionKey: 'hook:1',
        hookName: 'agent',
        error: null,
        durationMs: 1200,
        node: 'n1',
      } as never),
      '03:04:05.006 run       r1 succeeded (agent, hook:1) 1200 ms [n1]',
    );
    assert.equal(
      eventLine({
        type: 'delivery',
        at,
        deliveryId: 'd1',
        runId: 'r1',
        channel: 'telegram',
        state: 'pending',
        change: 'retry',
        attempts: 2,
        lastError: '429',
      }),
      '03:04:05.006 delivery  d1 retry via telegram (attempt 2) run r1: 429',
    );
    assert.equal(
      eventLine({ type: 'heartbeat', at, sessionKey: 'main', outcome: 'ok', events: 3 }),
      '03:04:05.006 heartbeat main ok, 3 events',
    );
  });
});
