import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveRoute, type RouteInputs } from '../../src/runtime/routing.js';

const LAST = { channel: 'telegram', to: '1001' };
const DEFAULT = { channel: 'slack', to: 'C42' };
const route = (over: Partial<RouteInputs>) => resolveRoute({ channel: 'last', to: null, lastRoute: undefined, defaultRoute: undefined, ...over });

describe('resolveRoute', () => {
  it('an explicit channel and recipient win over the last route and the default', () => {
    assert.deepEqual(route({ channel: 'discord', to: '555', lastRoute: LAST, defaultRoute: DEFAULT }), { channel: 'discord', to: '555', explicit: true });
  });

  it('an explicit channel without a recipient borrows it from the last route, else the default, on the same channel only', () => {
    assert.deepEqual(route({ channel: 'telegram', lastRoute: LAST, defaultRoute: { channel: 'telegram', to: '2002' } }), { channel: 'telegram', to: '1001', explicit: false });
    assert.deepEqual(route({ channel: 'slack', lastRoute: LAST, defaultRoute: DEFAULT }), { channel: 'slack', to: 'C42', explicit: false });
    assert.deepEqual(route({ channel: 'discord', lastRoute: LAST, defaultRoute: DEFAULT }), { channel: 'discord', to: '', explicit: false });
  });

  it('`last` is the main session’s last route before channels.default', () => {
    assert.deepEqual(route({ lastRoute: LAST, defaultRoute: DEFAULT }), { channel: 'telegram', to: '1001', explicit: false });
    assert.deepEqual(route({ defaultRoute: DEFAULT }), { channel: 'slack', to: 'C42', explicit: false });
    assert.deepEqual(route({ defaultRoute: { channel: 'log' } }), { channel: 'log', to: '', explicit: false });
  });

  it('`last` with a recipient keeps the channel and replaces the recipient, and is not explicit', () => {
    assert.deepEqual(route({ to: '777', lastRoute: LAST, defaultRoute: DEFAULT }), { channel: 'telegram', to: '777', explicit: false });
    assert.deepEqual(route({ to: '777', defaultRoute: DEFAULT }), { channel: 'slack', to: '777', explicit: false });
  });

  it('no last route and no default: no route', () => {
    assert.equal(route({}), undefined);
    assert.equal(route({ to: '777' }), undefined);
  });
});
