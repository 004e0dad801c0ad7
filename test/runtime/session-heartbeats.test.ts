import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SessionHeartbeats } from '../../src/runtime/session-heartbeats.js';
import { event } from '../store/contract.js';
import { waitFor } from '../support/runtime-kit.js';
import { type RuntimeKit, startRuntimeKit } from './kit.js';

describe('heartbeats: one per session with pending events', () => {
  let kit: RuntimeKit;
  let heartbeats: SessionHeartbeats | undefined;

  beforeEach(async () => {
    kit = await startRuntimeKit({ handler: (c) => `seen: ${c.lastUser.split('\n')[1] ?? ''}` });
  });
  afterEach(async () => {
    await heartbeats?.close();
    heartbeats = undefined;
    await kit.close();
  });

  const addTo = (sessionKey: string, text: string) =>
    kit.store.addEvents([event({ sessionKey, text, createdAt: Date.now() })]);
  const finished = (sessionKey: string) => kit.logged('heartbeat finished').filter((l) => l.sessionKey === sessionKey);

  it("a request for another session runs a turn over that session's events only, in that session, then forgets it", async () => {
    await addTo('main', 'main event');
    await addTo('ops:db', 'db event');
    heartbeats = new SessionHeartbeats(kit.deps);
    heartbeats.request('test', 'ops:db');
    await waitFor('the ops:db beat', () => finished('ops:db').length === 1);

    assert.equal(kit.model.calls.length, 1);
    assert.match(kit.model.calls[0]!.lastUser, /^System events \(1\):/);
    assert.ok(kit.model.calls[0]!.lastUser.includes('db event'));
    assert.ok(!kit.model.calls[0]!.lastUser.includes('main event'), "the main session's events are not in it");
    assert.equal((await kit.store.pendingEvents('ops:db')).length, 0);
    assert.equal((await kit.store.pendingEvents('main')).length, 1, 'main stays pending');
    const transcript = await kit.store.sessionMessages('main', 'ops:db', 10);
    assert.deepEqual(
      transcript.map((m) => m.role),
      ['user', 'assistant'],
    );
    await waitFor('the idle heartbeat dropped', () => heartbeats!.activeSessions.length === 0);
  });

  it('start beats every session with pending events (a restart), main included', async () => {
    await addTo('main', 'left from before');
    await addTo('ops:a', 'a');
    await addTo('ops:b', 'b');
    heartbeats = new SessionHeartbeats(kit.deps);
    await heartbeats.start();
    await waitFor('three beats', () => kit.logged('heartbeat finished').length === 3);
    for (const key of ['main', 'ops:a', 'ops:b']) assert.equal((await kit.store.pendingEvents(key)).length, 0, key);
  });

  it('requests for one session coalesce like the main heartbeat, and sessions beat independently', async () => {
    await addTo('ops:a', 'a1');
    await addTo('ops:b', 'b1');
    heartbeats = new SessionHeartbeats(kit.deps);
    heartbeats.request('x', 'ops:a');
    heartbeats.request('y', 'ops:a');
    heartbeats.request('z', 'ops:b');
    await waitFor('both beats', () => finished('ops:a').length === 1 && finished('ops:b').length === 1);
    assert.deepEqual(finished('ops:a')[0]!.reasons, ['x', 'y']);
    assert.equal(kit.model.calls.length, 2);
  });

  it('after close, requests are ignored', async () => {
    heartbeats = new SessionHeartbeats(kit.deps);
    await heartbeats.close();
    heartbeats.request('late', 'ops:x');
    assert.deepEqual(heartbeats.activeSessions, []);
  });
});
