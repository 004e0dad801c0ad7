import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  parseDeliveriesQuery,
  parseLimit,
  parseReceivedQuery,
  parseRunsQuery,
  parseSessionsQuery,
} from '../../src/admin/query.js';
import { AdminError } from '../../src/errors.js';

const q = (s: string) => new URLSearchParams(s);

function refused(fn: () => unknown, param: string): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AdminError);
    assert.equal(err.code, 'invalid_query');
    assert.equal(err.status, 400);
    assert.ok(err.message.startsWith(`${param}: `), err.message);
    return true;
  });
}

describe('admin query parsing', () => {
  it('limit: default 50, 1..200, integers only', () => {
    assert.equal(parseLimit(q('')), 50);
    assert.equal(parseLimit(q('limit=1')), 1);
    assert.equal(parseLimit(q('limit=200')), 200);
    for (const bad of [
      'limit=0',
      'limit=201',
      'limit=1.5',
      'limit=-1',
      'limit=abc',
      'limit=',
      'limit=1&limit=2',
      'limit=1e2',
    ])
      refused(() => parseLimit(q(bad)), 'limit');
  });

  it('runs: state from the run states, sessionKey, cursor passed through', () => {
    assert.deepEqual(parseRunsQuery(q('state=failed&sessionKey=hook:a&limit=5&cursor=abc')), {
      limit: 5,
      cursor: 'abc',
      state: 'failed',
      sessionKey: 'hook:a',
    });
    assert.deepEqual(parseRunsQuery(q('')), { limit: 50 });
    refused(() => parseRunsQuery(q('state=dead')), 'state');
    refused(() => parseRunsQuery(q('status=failed')), 'status');
    refused(() => parseRunsQuery(q(`sessionKey=${'x'.repeat(600)}`)), 'sessionKey');
  });

  it('deliveries: the shown words map to the store states (sent = delivered, failed = dead); the old words are aliases', () => {
    assert.equal(parseDeliveriesQuery(q('state=sent')).state, 'delivered');
    assert.equal(parseDeliveriesQuery(q('state=failed')).state, 'dead');
    assert.equal(parseDeliveriesQuery(q('state=pending')).state, 'pending');
    assert.equal(parseDeliveriesQuery(q('channel=slack')).channel, 'slack');
    assert.equal(parseDeliveriesQuery(q('state=dead')).state, 'dead');
    assert.equal(parseDeliveriesQuery(q('state=delivered')).state, 'delivered');
    refused(() => parseDeliveriesQuery(q('state=retry')), 'state');
    refused(() => parseDeliveriesQuery(q('state=toString')), 'state');
    refused(() => parseDeliveriesQuery(q('state=Sent')), 'state');
  });

  it('received: outcome accepted|rejected, path as the hook sub-path', () => {
    assert.deepEqual(parseReceivedQuery(q('outcome=rejected&path=/wake')), {
      limit: 50,
      outcome: 'rejected',
      path: 'wake',
    });
    assert.equal(parseReceivedQuery(q('path=github/push')).path, 'github/push');
    refused(() => parseReceivedQuery(q('outcome=refused')), 'outcome');
  });

  it('sessions: a limit only', () => {
    assert.deepEqual(parseSessionsQuery(q('limit=3')), { limit: 3 });
    refused(() => parseSessionsQuery(q('cursor=x')), 'cursor');
  });
});
