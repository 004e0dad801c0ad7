import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { readsLastRoute, resolveRoute, type RouteInputs } from '../../src/runtime/routing.js';

const LAST = { channel: 'telegram', to: '1001', accountId: null };
const DEFAULT = { channel: 'slack', to: 'C42' };
const route = (over: Partial<RouteInputs>) =>
  resolveRoute({ channel: 'last', to: null, accountId: null, lastRoute: undefined, defaultRoute: undefined, ...over });

describe('resolveRoute', () => {
  it('an explicit channel and recipient win over the last route and the default', () => {
    assert.deepEqual(route({ channel: 'discord', to: '555', lastRoute: LAST, defaultRoute: DEFAULT }), {
      channel: 'discord',
      to: '555',
      accountId: null,
      explicit: true,
    });
  });

  it('an explicit channel without a recipient borrows it from the last route, else the default, on the same channel only', () => {
    assert.deepEqual(
      route({ channel: 'telegram', lastRoute: LAST, defaultRoute: { channel: 'telegram', to: '2002' } }),
      { channel: 'telegram', to: '1001', accountId: null, explicit: false },
    );
    assert.deepEqual(route({ channel: 'slack', lastRoute: LAST, defaultRoute: DEFAULT }), {
      channel: 'slack',
      to: 'C42',
      accountId: null,
      explicit: false,
    });
    assert.deepEqual(route({ channel: 'discord', lastRoute: LAST, defaultRoute: DEFAULT }), {
      channel: 'discord',
      to: '',
      accountId: null,
      explicit: false,
    });
  });

  it('`last` is the main session’s last route before channels.default', () => {
    assert.deepEqual(route({ lastRoute: LAST, defaultRoute: DEFAULT }), {
      channel: 'telegram',
      to: '1001',
      accountId: null,
      explicit: false,
    });
    assert.deepEqual(route({ defaultRoute: DEFAULT }), {
      channel: 'slack',
      to: 'C42',
      accountId: null,
      explicit: false,
    });
    assert.deepEqual(route({ defaultRoute: { channel: 'log' } }), {
      channel: 'log',
      to: '',
      accountId: null,
      explicit: false,
    });
  });

  it('`last` with a recipient keeps the channel and replaces the recipient, and is not explicit', () => {
    assert.deepEqual(route({ to: '777', lastRoute: LAST, defaultRoute: DEFAULT }), {
      channel: 'telegram',
      to: '777',
      accountId: null,
      explicit: false,
    });
    assert.deepEqual(route({ to: '777', defaultRoute: DEFAULT }), {
      channel: 'slack',
      to: '777',
      accountId: null,
      explicit: false,
    });
  });

  it('an account travels with the route: the run’s own, else the last route’s when its recipient is borrowed', () => {
    const viaAlerts = { channel: 'telegram', to: '1001', accountId: 'alerts' };
    assert.deepEqual(route({ channel: 'telegram', to: '555', accountId: 'alerts', lastRoute: LAST }), {
      channel: 'telegram',
      to: '555',
      accountId: 'alerts',
      explicit: true,
    });
    assert.deepEqual(
      route({ lastRoute: viaAlerts, defaultRoute: DEFAULT }),
      { channel: 'telegram', to: '1001', accountId: 'alerts', explicit: false },
      '`last` goes through the account the last explicit delivery used',
    );
    assert.deepEqual(route({ to: '777', lastRoute: viaAlerts }), {
      channel: 'telegram',
      to: '777',
      accountId: 'alerts',
      explicit: false,
    });
    assert.deepEqual(
      route({ channel: 'telegram', lastRoute: viaAlerts }),
      { channel: 'telegram', to: '1001', accountId: 'alerts', explicit: false },
      'a borrowed recipient brings its account',
    );
    assert.deepEqual(
      route({ channel: 'telegram', accountId: 'ops', lastRoute: viaAlerts }),
      { channel: 'telegram', to: '1001', accountId: 'ops', explicit: false },
      'the run’s account wins',
    );
    assert.deepEqual(
      route({ channel: 'telegram', to: '555', lastRoute: viaAlerts }),
      { channel: 'telegram', to: '555', accountId: null, explicit: true },
      'an explicit route without an account is the default account',
    );
    assert.deepEqual(route({ defaultRoute: { channel: 'telegram', to: '2002' } }), {
      channel: 'telegram',
      to: '2002',
      accountId: null,
      explicit: false,
    });
  });

  it('no last route and no default: no route', () => {
    assert.equal(route({}), undefined);
    assert.equal(route({ to: '777' }), undefined);
  });
});

describe('readsLastRoute', () => {
  const channel = fc.constantFrom('last', 'telegram', 'slack', 'discord');
  const to = fc.option(fc.constantFrom('1001', 'C42', ''), { nil: null });
  const account = fc.option(fc.constantFrom('work', 'home'), { nil: null });
  const sessionRoute = fc.record({ channel, to: fc.constantFrom('1001', 'C42'), accountId: account });
  const defaultRoute = fc.option(fc.record({ channel, to: fc.option(fc.constantFrom('2002'), { nil: undefined }) }), {
    nil: undefined,
  });

  // The run worker reads the main session's route only when this says so: a route it did not read must not have
  // changed the answer.
  it('is true whenever the main session’s route can change where a reply goes', () => {
    fc.assert(
      fc.property(channel, to, account, sessionRoute, defaultRoute, (c, t, a, last, def) => {
        const inputs = { channel: c, to: t, accountId: a, defaultRoute: def };
        if (readsLastRoute(inputs)) return;
        assert.deepEqual(
          resolveRoute({ ...inputs, lastRoute: last }),
          resolveRoute({ ...inputs, lastRoute: undefined }),
        );
      }),
    );
  });

  it('is false only for an explicit channel with an explicit recipient', () => {
    assert.equal(readsLastRoute({ channel: 'telegram', to: '1001' }), false);
    assert.equal(readsLastRoute({ channel: 'telegram', to: null }), true);
    assert.equal(readsLastRoute({ channel: 'last', to: '1001' }), true);
    assert.equal(readsLastRoute({ channel: 'last', to: null }), true);
  });
});
