/**
 * Crash recovery (docs/reference.md#durability): kill -9 the real server while agent runs, deliveries and a heartbeat
 * are mid-flight, start it again on the same store, and check what the outside can see: every accepted run completes
 * with its original id, each run's reply reaches the receiver as one delivery (the same webhook-id may arrive twice:
 * that is the at-least-once inside), and every pending event is fed to a heartbeat after the restart.
 * Run `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { storedEvents } from '../support/db.js';
import {
  cli,
  openServerStore,
  pendingFromShow,
  postAgent,
  postWake,
  startServer,
  waitFor,
  webhookDeliveries,
  webhookSecret,
} from '../support/runtime-kit.js';
import { delay, startScriptedModel } from '../support/scripted-model.js';
import type { Hookgate } from '../support/server.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) {
    try {
      await c();
    } catch {
      /* keep cleaning up */
    }
  }
});

const dbOf = (hg: Hookgate) => join(hg.dir, 'data/hookgate.db');
/**
 * On PostgreSQL (HOOKGATE_TEST_STORE=postgres) the store is shared: a restarted process is a new node and waits for
 * the dead one's leases (runs, heartbeat: 30 s; deliveries: 60 s) to expire instead of taking them back at start.
 */
const leaseSlack = (hg: Hookgate, leaseMs = 30_000) => (hg.storage.driver === 'postgres' ? leaseMs + 5000 : 0);

describe('kill -9 and restart', { timeout: 240_000 }, () => {
  it('during agent runs and deliveries: every accepted run completes once as far as the receiver can see, same ids', async (t) => {
    const secret = webhookSecret();
    const receiver = await startWebhookReceiver(secret);
    cleanups.push(() => receiver.close());
    // The first answers are slow, so the kill lands while a delivery is in flight (it is then sent again).
    receiver.script.push(
      { status: 200, delayMs: 2500 },
      { status: 200, delayMs: 2500 },
      { status: 200, delayMs: 2500 },
    );
    // Runs take a second at the model, so several are mid-flight at the kill; heartbeats answer at once.
    const model = await startScriptedModel(async (c) => {
      if (c.heartbeat) return 'HEARTBEAT_OK';
      await delay(1000);
      return `done: ${/crash-run-\d+/.exec(c.lastUser)?.[0] ?? '?'}`;
    });
    cleanups.push(() => model.close());
    const hg = await startServer({
      heartbeat: { every: 'off' },
      models: { providers: { slow: { api: 'openai-chat', baseUrl: model.url, apiKey: 'test-key', maxAttempts: 1 } } },
      agents: { defaults: { maxConcurrent: 3 }, list: [{ id: 'main', default: true, model: 'slow/m' }] },
      channels: {
        webhook: { targets: { ops: { url: receiver.url, secret } } },
        outbox: { initialBackoffMs: 50, maxBackoffMs: 200, maxAttempts: 5 },
      },
    });
    cleanups.push(() => hg.cleanup());

    const runIds: string[] = [];
    for (let i = 1; i <= 9; i++) {
      runIds.push(
        await postAgent(hg, {
          message: `crash-run-${i}: summarise`,
          name: `crash-${i}`,
          channel: 'webhook',
          to: 'ops',
          wakeMode: 'now',
        }),
      );
    }
    const wakeTexts = [1, 2, 3].map((i) => `pending wake ${i} before the crash`);
    for (const w of wakeTexts) await postWake(hg, w, 'next-heartbeat');

    let store: SqliteStore = openServerStore(hg);
    try {
      await waitFor(
        'a finished run, a run at the model and a delivery in flight',
        async () => {
          const done = (await store.listRuns({ state: 'succeeded', limit: 100 })).length;
          return (
            done >= 1 &&
            model.calls.some((c) => !c.heartbeat && c.endedAt === undefined) &&
            receiver.received.length >= 1
          );
        },
        { timeoutMs: 20_000, intervalMs: 10 },
      );
    } finally {
      await store.close();
    }
    await hg.kill9();

    const atCrash = openServerStore(hg);
    const unfinished = (await atCrash.listRuns({ limit: 100 })).filter((r) => r.state !== 'succeeded').map((r) => r.id);
    const pendingAtCrash = (await atCrash.pendingEvents('main')).map((e) => e.text);
    await atCrash.close();
    t.diagnostic(
      `at the kill: ${unfinished.length} runs unfinished, ${pendingAtCrash.length} events pending, ${receiver.received.length} webhook requests`,
    );
    assert.ok(unfinished.length >= 1, 'the kill came after every run had finished: nothing was tested');

    const callsBeforeRestart = model.calls.length;
    await hg.restart();
    store = openServerStore(hg);
    try {
      await waitFor(
        'every run succeeded',
        async () => {
          const runs = await Promise.all(runIds.map((id) => store.getRun(id)));
          return runs.every((r) => r?.state === 'succeeded') ? runs : undefined;
        },
        30_000 + leaseSlack(hg),
      );
      await waitFor(
        'a delivery of every run',
        () => runIds.every((id) => webhookDeliveries(receiver).some((d) => d.body.runId === id)),
        20_000 + leaseSlack(hg, 60_000),
      );
      await waitFor(
        'every delivery row delivered',
        async () => (await store.listDeliveries({ limit: 100 })).every((d) => d.state === 'delivered'),
        10_000,
      );
      await waitFor('no event pending', async () => (await store.pendingEvents('main')).length === 0, 15_000);
      // Anything still in the pipe (a late duplicate) shows up now rather than after the assertions.
      await delay(500);

      const runs = await Promise.all(runIds.map((id) => store.getRun(id)));
      for (const [i, r] of runs.entries()) {
        assert.ok(r, `run ${runIds[i]} is gone`);
        assert.equal(r.state, 'succeeded', `${r.id}: ${r.error}`);
        assert.equal(r.reply, `done: crash-run-${i + 1}`);
      }
      assert.ok(
        runs.some((r) => r!.attempts >= 2),
        'no run was interrupted and run again (attempts ≥ 2)',
      );
      // A run that was at the model when the process died ran again after the restart, under the same id.
      const tagOf = (id: string) => `crash-run-${runIds.indexOf(id) + 1}:`;
      const interrupted = unfinished.filter((id) =>
        model.calls.slice(0, callsBeforeRestart).some((c) => c.lastUser.includes(tagOf(id))),
      );
      assert.ok(interrupted.length >= 1, 'no run was at the model at the kill');
      for (const id of interrupted) {
        assert.ok((await store.getRun(id))!.attempts >= 2, `run ${id} was interrupted but not started again`);
        assert.ok(
          model.calls.slice(callsBeforeRestart).some((c) => c.lastUser.includes(tagOf(id))),
          `run ${id} did not reach the model again`,
        );
      }

      // The outside view: exactly one distinct delivery (webhook-id) per run, one delivery per accepted run.
      const got = webhookDeliveries(receiver);
      for (const d of got) assert.ok(d.verified, `unsigned delivery: ${d.raw.failure}`);
      const idsByRun = new Map<string, Set<string>>();
      for (const d of got) {
        const runId = String(d.body.runId);
        if (!idsByRun.has(runId)) idsByRun.set(runId, new Set());
        idsByRun.get(runId)!.add(d.id);
      }
      assert.deepEqual(
        [...idsByRun.keys()].sort(),
        [...runIds].sort(),
        'deliveries for runs that were not accepted, or runs without one',
      );
      for (const id of runIds)
        assert.equal(idsByRun.get(id)!.size, 1, `run ${id} was delivered under ${idsByRun.get(id)!.size} delivery ids`);
      const repeats = got.length - runIds.length;
      t.diagnostic(
        `${got.length} webhook requests for ${runIds.length} runs (${repeats} repeated after the crash: at-least-once inside)`,
      );
      for (const [i, id] of runIds.entries()) {
        assert.ok(
          got.filter((d) => d.body.runId === id).every((d) => d.body.text === `done: crash-run-${i + 1}`),
          `run ${id} delivered another run's reply`,
        );
      }

      // Every event pending at the crash was fed to a heartbeat after the restart.
      const afterRestart = model.calls.slice(callsBeforeRestart).filter((c) => c.heartbeat);
      for (const text of pendingAtCrash) {
        assert.ok(
          afterRestart.some((c) => c.lastUser.includes(text)),
          `pending event not fed after the restart: ${text}`,
        );
      }
      for (const w of wakeTexts)
        assert.ok(
          model.calls.some((c) => c.heartbeat && c.lastUser.includes(w)),
          `wake never fed: ${w}`,
        );
      for (let i = 1; i <= 9; i++) {
        assert.ok(
          model.calls.some((c) => c.heartbeat && c.lastUser.includes(`Hook crash-${i}: done: crash-run-${i}`)),
          `summary of run ${i} never fed`,
        );
      }
      const show = await cli(hg, 'sessions', 'show', 'main');
      assert.equal(pendingFromShow(show.stdout), 0, show.stdout);
      for (const e of storedEvents(dbOf(hg)).values())
        assert.notEqual(e.consumedAt, null, `event never consumed: ${e.text}`);
    } finally {
      await store.close();
    }
  });

  it('during a heartbeat: the events stay pending and are fed to a heartbeat after the restart', async () => {
    let hang = true;
    const model = await startScriptedModel((c) => (c.heartbeat && hang ? 'hang' : 'HEARTBEAT_OK'));
    cleanups.push(() => model.close());
    const hg = await startServer({
      heartbeat: { every: 'off' },
      models: { providers: { local: { api: 'openai-chat', baseUrl: model.url, apiKey: 'test-key', maxAttempts: 1 } } },
      agents: { list: [{ id: 'main', default: true, model: 'local/main' }] },
    });
    cleanups.push(() => hg.cleanup());

    let store = openServerStore(hg);
    const texts: string[] = [];
    try {
      const runId = await postAgent(hg, {
        message: 'a run before the heartbeat',
        name: 'Before',
        model: 'echo/echo',
        deliver: false,
        wakeMode: 'next-heartbeat',
      });
      await waitFor('the run finished', async () => (await store.getRun(runId))?.state === 'succeeded');
      texts.push('Hook Before: echo: a run before the heartbeat');
      for (const i of [1, 2]) {
        texts.push(`queued wake ${i}`);
        await postWake(hg, `queued wake ${i}`, 'next-heartbeat');
      }
      texts.push('the wake that starts the heartbeat');
      await postWake(hg, 'the wake that starts the heartbeat', 'now');
      const call = await waitFor('the heartbeat at the model', () => model.calls.find((c) => c.heartbeat));
      for (const t of texts) assert.ok(call.lastUser.includes(t), `heartbeat prompt lacks ${t}`);
      assert.equal((await store.pendingEvents('main')).length, 4, 'events were consumed before the turn finished');
    } finally {
      await store.close();
    }
    await hg.kill9();

    const mark = model.calls.length;
    hang = false;
    await hg.restart();
    const fed = await waitFor(
      'a heartbeat after the restart',
      () => model.calls.slice(mark).find((c) => c.heartbeat),
      10_000 + leaseSlack(hg),
    );
    for (const t of texts) assert.ok(fed.lastUser.includes(t), `not fed after the restart: ${t}`);
    assert.match(fed.lastUser, /^System events \(4\):/);
    const line = await waitFor('heartbeat finished', () => hg.logs.find((l) => l.msg === 'heartbeat finished'));
    // On PostgreSQL the heartbeat waits for the dead process's lease: it comes as a retry, not at startup.
    const reason = hg.storage.driver === 'postgres' ? 'retry' : 'startup';
    assert.ok((line.reasons as string[]).includes(reason), JSON.stringify(line.reasons));

    store = openServerStore(hg);
    try {
      await waitFor('nothing pending', async () => (await store.pendingEvents('main')).length === 0);
    } finally {
      await store.close();
    }
    const show = await cli(hg, 'sessions', 'show', 'main');
    assert.equal(pendingFromShow(show.stdout), 0, show.stdout);
    const events = [...storedEvents(dbOf(hg)).values()];
    for (const t of texts) assert.ok(events.find((e) => e.text === t)?.consumedAt, `not consumed: ${t}`);
    // fed exactly once after the restart
    await delay(600);
    assert.equal(model.calls.slice(mark).filter((c) => c.heartbeat).length, 1);
  });
});
