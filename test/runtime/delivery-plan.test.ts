import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DeliveryPlanInputs, planDelivery } from '../../src/runtime/delivery-plan.js';

const LAST = { channel: 'telegram', to: '1001', accountId: null };
const DEFAULT = { channel: 'slack', to: 'C42' };

describe('planDelivery', () => {
  const origin = { runId: 'run-1', heartbeatId: null, sessionKey: 'hook:gh', agentId: 'main', hookName: 'GitHub' };
  const plan = (over: Partial<DeliveryPlanInputs>) =>
    planDelivery({
      reply: 'the reply',
      deliver: true,
      ackMaxChars: 300,
      channel: 'last',
      to: null,
      accountId: null,
      lastRoute: LAST,
      defaultRoute: DEFAULT,
      id: 'd-1',
      origin,
      at: 1234,
      ...over,
    });

  it('one outbox row on the resolved route, carrying the origin', () => {
    assert.deepEqual(plan({}), {
      status: 'outbox',
      delivery: {
        id: 'd-1',
        ...origin,
        channel: 'telegram',
        to: '1001',
        accountId: null,
        text: 'the reply',
        explicitRoute: false,
        createdAt: 1234,
      },
    });
    assert.equal(plan({ channel: 'discord', to: '555' }).delivery?.explicitRoute, true);
    assert.equal(
      plan({ channel: 'telegram', to: '555', accountId: 'alerts' }).delivery?.accountId,
      'alerts',
      'the row carries the run’s account',
    );
  });

  it('deliver: false suppresses before anything else', () => {
    assert.deepEqual(plan({ deliver: false, reply: 'HEARTBEAT_OK', lastRoute: undefined, defaultRoute: undefined }), {
      status: 'suppressed:deliver_false',
    });
  });

  it('an acknowledgement (HEARTBEAT_OK within ackMaxChars, or an empty reply) is not delivered', () => {
    assert.deepEqual(plan({ reply: 'HEARTBEAT_OK' }), { status: 'suppressed:heartbeat_ack' });
    assert.deepEqual(plan({ reply: '  ' }), { status: 'suppressed:heartbeat_ack' });
    assert.deepEqual(plan({ reply: 'HEARTBEAT_OK all fine', ackMaxChars: 10 }), { status: 'suppressed:heartbeat_ack' });
    assert.equal(
      plan({ reply: 'HEARTBEAT_OK all fine', ackMaxChars: 5 }).status,
      'outbox',
      'more than ackMaxChars besides the token',
    );
    assert.equal(plan({ reply: 'mentions HEARTBEAT_OK in the middle' }).status, 'outbox');
  });

  it('no route: nowhere', () => {
    assert.deepEqual(plan({ lastRoute: undefined, defaultRoute: undefined }), { status: 'nowhere:no_route' });
  });
});
