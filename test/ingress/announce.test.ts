import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { performance } from 'node:perf_hooks';
import type { FeedEvent, ReceivedFeedEvent } from '../../src/feed.js';
import { announceReceived, FEED_MAX_IDS, routeLabel } from '../../src/ingress/announce.js';
import { parse } from '../config/helpers.js';

const { hooks } = parse({
  hooks: {
    mappings: [
      { id: 'gh', match: { path: 'github' }, messageTemplate: 'm' },
      { match: { path: 'stripe' }, messageTemplate: 'm' },
    ],
    presets: ['gmail', { use: 'slack', path: 'chat', secret: 'signing-secret' }],
  },
});

describe('the ingress on the live feed', () => {
  it('route labels are bounded by the config: wake, agent, a mapping id (as it compiles), a preset (built-in or sender), else other', () => {
    assert.equal(routeLabel(hooks, 'wake', null), 'wake');
    assert.equal(routeLabel(hooks, 'agent', null), 'agent');
    assert.equal(routeLabel(hooks, 'github', null), 'gh');
    assert.equal(routeLabel(hooks, 'stripe', null), 'mapping-2');
    assert.equal(routeLabel(hooks, 'gmail', null), 'gmail');
    assert.equal(routeLabel(hooks, 'chat', null), 'chat', "a sender preset's id is its path");
    assert.equal(routeLabel(hooks, 'anything/else', 'gh'), 'gh', 'the mapping that took the request wins');
    assert.equal(routeLabel(hooks, `probe-${Math.random()}`, null), 'other');
  });

  it('an accepted answer announces its ids (a large fan-out: the first 20, the rest counted); the path is made printable and bounded', () => {
    const events: FeedEvent[] = [];
    const runIds = Array.from({ length: 30 }, (_, i) => `run-${i}`);
    announceReceived(
      { publish: (e) => events.push(e) },
      {
        hooks,
        subPath: `fan\u0000${'x'.repeat(300)}`,
        clientIp: '10.0.0.1',
        reqId: 'r-1',
        started: performance.now(),
        at: 5,
        status: 200,
        code: null,
        mappingId: 'gh',
        body: { ok: true, runId: 'run-0', runIds, eventIds: ['ev-1'] },
      },
    );
    const e = events[0] as ReceivedFeedEvent;
    assert.equal(e.route, 'gh');
    assert.deepEqual(e.eventIds, ['ev-1']);
    assert.equal(e.runIds.length, FEED_MAX_IDS - 1);
    assert.equal(e.omittedIds, 11);
    assert.ok(e.path.length <= 200 && !e.path.includes('\u0000'));
    assert.ok(e.durationMs >= 0);
    assert.equal(e.reqId, 'r-1', "the request's id");
    announceReceived(undefined, {
      hooks,
      subPath: 'wake',
      clientIp: '',
      reqId: 'r-2',
      started: 0,
      at: 0,
      status: 200,
      code: null,
      mappingId: null,
    });
  });
});
