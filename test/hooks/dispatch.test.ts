/**
 * `dispatch`'s answers as written: a wake's and a run's answer carry their JSON (`json`), which must be the text
 * JSON.stringify writes for the body, and is left out when an id could not be written as it is; and what it tells the
 * runtime of the runs it accepts.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { buildHooksContext, type HooksContext } from '../../src/hooks/context.js';
import { type DispatchAnswer, type DispatchRequest, dispatch } from '../../src/hooks/dispatch.js';
import { idempotencyClaim } from '../../src/hooks/idempotency.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { event, received, run } from '../store/contract.js';
import { overlay } from '../support/overlay.js';
import { TOKEN } from '../support/token.js';

const noSignals = { heartbeatRequested: () => {}, runsQueued: () => {} };

/** An in-memory store and the hooks context of a minimal config, made before each test of the calling suite. */
function storeAndContext(): { store: SqliteStore; ctx: HooksContext } {
  const got = {} as { store: SqliteStore; ctx: HooksContext };
  beforeEach(() => {
    got.store = new SqliteStore({ path: ':memory:', writer: 'inline' });
    const config = validateConfig({ hooks: { enabled: true, token: TOKEN } }, undefined, process.cwd(), { env: {} });
    got.ctx = buildHooksContext(config, 1);
  });
  afterEach(() => got.store.close());
  return got;
}

describe('dispatch: the answer as JSON', () => {
  const t = storeAndContext();

  const wake = (text: string, over: Partial<DispatchRequest> = {}): Promise<DispatchAnswer> =>
    dispatch(t.ctx, t.store, noSignals, {
      actions: [{ kind: 'wake', text, mode: 'next-heartbeat', sessionKey: 'main' }],
      idempotency: undefined,
      received: received({ at: Date.now() }),
      ...over,
    });

  it('a queued wake, a coalesced one and a run: the text JSON.stringify writes for the body', async () => {
    const queued = await wake('ping');
    assert.equal(queued.body.eventOutcome, 'queued');
    assert.equal(queued.json, JSON.stringify(queued.body));
    const coalesced = await wake('ping');
    assert.equal(coalesced.body.eventOutcome, 'coalesced');
    assert.equal(coalesced.json, JSON.stringify(coalesced.body));

    const agent = await dispatch(t.ctx, t.store, noSignals, {
      actions: [{ kind: 'agent', run: run({ createdAt: Date.now() }) }],
      idempotency: undefined,
      received: received({ at: Date.now(), path: 'agent' }),
    });
    assert.equal(agent.status, 200);
    assert.equal(agent.json, JSON.stringify(agent.body));
    assert.deepEqual(Object.keys(JSON.parse(agent.json!) as object), ['ok', 'runId']);
  });

  it('an id that JSON must escape: no json, so the answer is written from the body', async () => {
    const odd = 'ev"\\1\u00e9';
    await t.store.accept({
      events: [event({ id: odd, text: 'odd', createdAt: Date.now() })],
      runs: [],
      idempotency: undefined,
      answerSpec: {},
      received: received({ at: Date.now() }),
    });
    const answer = await wake('odd'); // coalesced into the stored event
    assert.equal(answer.body.eventId, odd);
    assert.equal(answer.json, undefined);
  });

  it('a repeated idempotency key: the first answer with duplicate, as a body only', async () => {
    const key = () =>
      idempotencyClaim(
        'wake',
        'k-1',
        Buffer.from('{"text":"again"}'),
        { sender: '127.0.0.1', hooks: t.ctx.config.hooks },
        Date.now(),
      );
    const first = await wake('again', { idempotency: key() });
    const again = await wake('again', { idempotency: key() });
    assert.equal(again.duplicate, true);
    assert.equal(again.json, undefined);
    assert.deepEqual(again.body, { ...first.body, duplicate: true });
  });
});

describe('dispatch: telling the runtime about runs', () => {
  const t = storeAndContext();

  /** One agent request; what the store and the signals saw, in order. */
  async function agentWith(accepting: (() => boolean) | undefined): Promise<string[]> {
    const seen: string[] = [];
    const watched = overlay(t.store, {
      accept: (...a) => {
        seen.push('accept queued');
        return t.store.accept(...a).then((r) => (seen.push('accept committed'), r));
      },
    });
    const signals = {
      heartbeatRequested: () => {},
      ...(accepting ? { runsAccepting: () => (seen.push('runsAccepting'), accepting()) } : {}),
      runsQueued: (_runs?: unknown, claimed?: boolean) => void seen.push(`runsQueued claimed=${claimed}`),
    };
    await dispatch(t.ctx, watched, signals, {
      actions: [{ kind: 'agent', run: run({ createdAt: Date.now() }) }],
      idempotency: undefined,
      received: received({ at: Date.now(), path: 'agent' }),
    });
    return seen;
  }

  it('runsAccepting is told once the accept is queued, before its commit; runsQueued says whether it took them', async () => {
    const told = ['accept queued', 'runsAccepting', 'accept committed'];
    assert.deepEqual(await agentWith(() => true), [...told, 'runsQueued claimed=true']);
    assert.deepEqual(await agentWith(() => false), [...told, 'runsQueued claimed=false']);
    assert.deepEqual(await agentWith(undefined), ['accept queued', 'accept committed', 'runsQueued claimed=false']);
  });

  it('a wake tells neither', async () => {
    let told = 0;
    const signals = {
      heartbeatRequested: () => {},
      runsAccepting: () => (told++, true),
      runsQueued: () => void told++,
    };
    await dispatch(t.ctx, t.store, signals, {
      actions: [{ kind: 'wake', text: 'ping', mode: 'next-heartbeat', sessionKey: 'main' }],
      idempotency: undefined,
      received: received({ at: Date.now() }),
    });
    assert.equal(told, 0);
  });
});
