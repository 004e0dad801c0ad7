/**
 * The admin store's part of the contract (src/store/pages.ts): cursor pages without loss or repetition, filters,
 * queue depths, recent failures, the write probe. Called from storeContract, so it runs on every driver.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HookgateError, StoreError } from '../../src/errors.js';
import type { Page } from '../../src/store/pages.js';
import { RECEIVED_BLOCKS_PER_PAGE } from '../../src/store/pages-cursor.js';
import type { NewDelivery, RunState, Store } from '../../src/store/types.js';
import { command, completion, delivery, event, received, run, type StoreHarness } from './contract.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** Every page of a list, following nextCursor until null (bounded: a cursor that loops fails the test). */
async function allPages<T>(first: (cursor?: string) => Promise<Page<T>>, max = 100): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (let i = 0; i < max; i++) {
    const page = await first(cursor);
    pages.push(page.items);
    if (page.nextCursor === null) return pages;
    cursor = page.nextCursor;
  }
  assert.fail('nextCursor never became null');
}

async function assertInvalidQuery(p: Promise<unknown>): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof HookgateError, `expected a HookgateError, got ${String(err)}`);
    assert.equal(err.code, 'invalid_query');
    assert.match(err.message, /cursor/);
    return true;
  });
}

export function pagesContract(h: () => StoreHarness): void {
  const store = (): Store => h().store;
  const addDeliveries = (...ds: NewDelivery[]) =>
    store().completeHeartbeat({
      heartbeatId: 'hb',
      sessionKey: 'main',
      eventIds: [],
      consumedAt: T0,
      deliveries: ds,
      messages: [],
    });

  describe('admin pages (AdminStore)', () => {
    it('pageRuns: newest first, every run exactly once across pages, nextCursor null on the last', async () => {
      const runs = Array.from({ length: 7 }, (_, i) => run({ createdAt: T0 + i }));
      for (const r of runs) await store().accept(command({ runs: [r] }));
      const pages = await allPages((cursor) => store().pageRuns({ limit: 3, ...(cursor ? { cursor } : {}) }));
      assert.deepEqual(
        pages.map((p) => p.length),
        [3, 3, 1],
      );
      assert.deepEqual(
        pages.flat().map((r) => r.id),
        runs.map((r) => r.id).reverse(),
      );
      // A run accepted after the first page was read does not shift the later pages.
      const first = await store().pageRuns({ limit: 3 });
      await store().accept(command({ runs: [run()] }));
      const second = await store().pageRuns({ limit: 3, cursor: first.nextCursor! });
      assert.deepEqual(
        second.items.map((r) => r.id),
        runs
          .slice(1, 4)
          .map((r) => r.id)
          .reverse(),
      );
      assert.equal((await store().pageRuns({ limit: 200 })).nextCursor, null);
    });

    it('pageRuns: filters by state and session key; an exact page fits without an empty next page', async () => {
      const a = run({ sessionKey: 'hook:a' });
      const b = run({ sessionKey: 'hook:b' });
      const c = run({ sessionKey: 'hook:a' });
      await store().accept(command({ runs: [a, b, c] }));
      assert.deepEqual(
        (await store().pageRuns({ limit: 10, sessionKey: 'hook:a' })).items.map((r) => r.id),
        [c.id, a.id],
      );
      const byA = await store().pageRuns({ limit: 2, sessionKey: 'hook:a' });
      assert.equal(byA.nextCursor, null);
      const setState = h().setRunState;
      if (setState) {
        await setState(b.id, 'failed' as RunState, T0 + 5);
        const failed = await store().pageRuns({ limit: 10, state: 'failed' });
        assert.deepEqual(
          failed.items.map((r) => [r.id, r.state]),
          [[b.id, 'failed']],
        );
        assert.deepEqual((await store().pageRuns({ limit: 10, state: 'failed', sessionKey: 'hook:a' })).items, []);
      }
    });

    it("pageRuns of a run's own session: its own run and the runs that name its key, newest first, across pages", async () => {
      const own = run();
      const named = [run({ sessionKey: own.sessionKey }), run({ sessionKey: own.sessionKey })];
      await store().accept(command({ runs: [named[0]!, own, run(), named[1]!] }));
      const first = await store().pageRuns({ limit: 2, sessionKey: own.sessionKey });
      assert.deepEqual(
        first.items.map((r) => r.id),
        [named[1]!.id, own.id],
      );
      assert.ok(first.nextCursor);
      const second = await store().pageRuns({ limit: 2, sessionKey: own.sessionKey, cursor: first.nextCursor });
      assert.deepEqual(
        second.items.map((r) => r.id),
        [named[0]!.id],
      );
      assert.equal(second.nextCursor, null);
      assert.deepEqual(
        (await store().pageRuns({ limit: 10, sessionKey: own.sessionKey, state: 'queued' })).items.map((r) => r.id),
        [named[1]!.id, own.id, named[0]!.id],
      );
    });

    it('a cursor that is not this list’s is refused as invalid_query naming cursor', async () => {
      await store().accept(command({ runs: [run(), run()] }));
      await addDeliveries(delivery(), delivery());
      const runsCursor = (await store().pageRuns({ limit: 1 })).nextCursor!;
      const deliveriesCursor = (await store().pageDeliveries({ limit: 1 })).nextCursor!;
      await assertInvalidQuery(store().pageRuns({ limit: 1, cursor: 'garbage!' }));
      await assertInvalidQuery(store().pageRuns({ limit: 1, cursor: deliveriesCursor }));
      await assertInvalidQuery(store().pageDeliveries({ limit: 1, cursor: runsCursor }));
      await assertInvalidQuery(store().pageReceived({ limit: 1, cursor: runsCursor }));
      await assertInvalidQuery(
        store().pageRuns({ limit: 1, cursor: Buffer.from('{"k":"runs","s":-1}').toString('base64url') }),
      );
    });

    it('pageDeliveries: newest first across pages, filtered by state and channel', async () => {
      const ds = Array.from({ length: 5 }, (_, i) =>
        delivery({ channel: i % 2 ? 'slack' : 'telegram', to: `chat-${i}`, createdAt: T0 + i }),
      );
      await addDeliveries(...ds);
      const pages = await allPages((cursor) => store().pageDeliveries({ limit: 2, ...(cursor ? { cursor } : {}) }));
      assert.deepEqual(
        pages.flat().map((d) => d.id),
        ds.map((d) => d.id).reverse(),
      );
      const slack = await allPages((cursor) =>
        store().pageDeliveries({ limit: 1, channel: 'slack', ...(cursor ? { cursor } : {}) }),
      );
      assert.deepEqual(
        slack.flat().map((d) => d.id),
        [ds[3]!.id, ds[1]!.id],
      );
      const [claimed] = await store().claimDeliveries('o', T0 + 100, 60_000, 1);
      await store().finishDelivery(claimed!.id, 'o', { kind: 'dead', error: 'chat not found', at: T0 + 101 }, T0 + 101);
      const dead = await store().pageDeliveries({ limit: 10, state: 'dead' });
      assert.deepEqual(
        dead.items.map((d) => [d.id, d.lastError]),
        [[claimed!.id, 'chat not found']],
      );
      assert.equal((await store().pageDeliveries({ limit: 10, state: 'pending' })).items.length, 4);
      const [sent] = await store().claimDeliveries('o', T0 + 200, 60_000, 1);
      await store().finishDelivery(sent!.id, 'o', { kind: 'delivered', at: T0 + 201 }, T0 + 201);
      const delivered = await store().pageDeliveries({ limit: 10, state: 'delivered' });
      assert.deepEqual(
        delivered.items.map((d) => d.id),
        [sent!.id],
      );
    });

    it('pageReceived: records and refusal counts merged newest first, each once, with stable ids', async () => {
      // Several batches (blocks), some rejected, and a window of refusal counts in between.
      for (let i = 0; i < 6; i++) {
        await store().recordReceived(
          received({
            at: T0 + i * 10,
            path: i % 2 ? 'agent' : 'wake',
            status: i === 4 ? 401 : 200,
            code: i === 4 ? 'unauthorized' : null,
          }),
        );
      }
      await Promise.all([1, 2, 3].map((j) => store().recordReceived(received({ at: T0 + 100 + j }))));
      await store().recordRefusals(
        {
          at: T0 + 25,
          windowMs: 1000,
          counts: [{ status: 401, code: 'unauthorized', path: 'wake', bucket: '10.0.0.0/24', count: 7 }],
        },
        100,
      );
      const all = (
        await allPages((cursor) => store().pageReceived({ limit: 2, ...(cursor ? { cursor } : {}) }))
      ).flat();
      assert.equal(all.length, 10);
      assert.equal(new Set(all.map((r) => r.id)).size, 10, 'an id repeated');
      const ats = all.map((r) => r.at);
      assert.deepEqual(
        ats,
        [...ats].sort((x, y) => y - x),
        'not newest first',
      );
      assert.deepEqual(all.find((r) => r.count !== undefined)?.count, 7);
      const again = (await store().pageReceived({ limit: 200 })).items;
      assert.deepEqual(
        again.map((r) => r.id),
        all.map((r) => r.id),
        'ids are not stable',
      );

      const rejected = (
        await allPages((cursor) =>
          store().pageReceived({ limit: 1, outcome: 'rejected', ...(cursor ? { cursor } : {}) }),
        )
      ).flat();
      assert.deepEqual(
        rejected.map((r) => [r.status, r.count ?? 1]),
        [
          [401, 1],
          [401, 7],
        ],
      );
      const accepted = (await store().pageReceived({ limit: 200, outcome: 'accepted' })).items;
      assert.equal(accepted.length, 8);
      assert.ok(accepted.every((r) => r.status < 400));
      const agent = (await store().pageReceived({ limit: 200, path: 'agent' })).items;
      assert.deepEqual(
        agent.map((r) => r.at),
        [T0 + 50, T0 + 30, T0 + 10],
      );
    });

    it('pageReceived: a filter that matches little reads a bounded number of blocks per page, and its cursor goes on', async () => {
      // One block per batch: the rejected record is the oldest, behind more blocks than a page reads.
      const n = RECEIVED_BLOCKS_PER_PAGE + 40;
      for (let i = 0; i < n; i++)
        await store().recordReceived(
          received({ at: T0 + i * 1000, status: i === 0 ? 400 : 200, code: i === 0 ? 'invalid_json' : null }),
        );
      // A window of refusal counts newer than every block (past the out-of-order margin): on the first page.
      await store().recordRefusals(
        {
          at: T0 + n * 1000 + 120_000,
          windowMs: 1000,
          counts: [{ status: 401, code: 'unauthorized', path: 'wake', bucket: '10.0.0.0/24', count: 3 }],
        },
        100,
      );
      const first = await store().pageReceived({ limit: 10, outcome: 'rejected' });
      assert.deepEqual(
        first.items.map((r) => [r.status, r.count ?? 1]),
        [[401, 3]],
      );
      assert.ok(first.nextCursor, 'the page stopped before the end of the log: a cursor to go on');
      const rest = (
        await allPages((cursor) =>
          store().pageReceived({ limit: 10, outcome: 'rejected', ...(cursor ? { cursor } : {}) }),
        )
      ).flat();
      assert.deepEqual(
        rest.map((r) => [r.status, r.code]),
        [
          [401, 'unauthorized'],
          [400, 'invalid_json'],
        ],
      );
      // Unfiltered, the same log pages fully: every page holds `limit` records but the last.
      const all = await allPages((cursor) => store().pageReceived({ limit: 100, ...(cursor ? { cursor } : {}) }));
      assert.deepEqual(
        all.map((p) => p.length),
        [100, 100, 97],
      );
    });

    it('pageReceived: no records, one empty page', async () => {
      assert.deepEqual(await store().pageReceived({ limit: 5 }), { items: [], nextCursor: null });
    });

    it('queueDepths counts what waits: queued and running runs, the outbox, pending events; never finished work', async () => {
      const empty = await store().queueDepths();
      assert.deepEqual(empty, { runs: { queued: 0, running: 0 }, outboxPending: 0, systemEventsPending: 0 });
      await store().accept(command({ runs: [run(), run()], events: [event({ text: 'a' })] }));
      await store().accept(command({ events: [event({ text: 'b', sessionKey: 'other' })] }));
      await addDeliveries(delivery({ to: 'x' }), delivery({ to: 'y' }));
      const [d] = await store().claimDeliveries('o', T0 + 100, 60_000, 1);
      await store().finishDelivery(d!.id, 'o', { kind: 'dead', error: 'gone', at: T0 + 100 }, T0 + 100);
      await store().claimRuns('o', T0 + 100, 60_000, 1);
      const depths = await store().queueDepths();
      assert.deepEqual(depths, { runs: { queued: 1, running: 1 }, outboxPending: 1, systemEventsPending: 2 });
      // A run that ends leaves the counts: it is history, counted by failuresSince in its window.
      const [r] = await store().claimRuns('o', T0 + 200, 60_000, 1);
      await store().completeRun(completion(r!.id, 'o', { state: 'failed', finishedAt: T0 + 300, error: 'model down' }));
      assert.deepEqual((await store().queueDepths()).runs, { queued: 0, running: 1 });
      assert.equal((await store().failuresSince(T0 + 300)).runsFailed, 1);
      assert.equal((await store().failuresSince(T0 + 301)).runsFailed, 0);
    });

    it('failuresSince counts failed runs, dead deliveries and refusals of the period only', async () => {
      const [old, recent] = [run(), run()];
      await store().accept(command({ runs: [old, recent] }));
      const setState = h().setRunState;
      if (setState) {
        await setState(old.id, 'failed', T0 - 10);
        await setState(recent.id, 'timed_out', T0 + 10);
      }
      await addDeliveries(delivery({ to: 'x' }));
      const [d] = await store().claimDeliveries('o', T0 + 100, 60_000, 1);
      await store().finishDelivery(d!.id, 'o', { kind: 'dead', error: 'gone', at: T0 + 100 }, T0 + 100);
      await store().recordReceived(received({ at: T0 - 5, status: 401, code: 'unauthorized' }));
      await store().recordReceived(received({ at: T0 + 5, status: 401, code: 'unauthorized' }));
      await store().recordReceived(received({ at: T0 + 6, status: 200 }));
      await store().recordReceived(received({ at: T0 + 7, status: 503, code: null }));
      await store().recordReceived(received({ at: T0 + 8, status: 200, mappingId: 'github', durationMs: 4.5 }));
      await store().recordRefusals(
        {
          at: T0 + 20,
          windowMs: 1000,
          counts: [{ status: 429, code: 'rate_limited', path: 'wake', bucket: '10.0.0.0/24', count: 4 }],
        },
        100,
      );
      await store().recordRefusals(
        {
          at: T0 - 2000,
          windowMs: 1000,
          counts: [{ status: 401, code: 'unauthorized', path: 'wake', bucket: '10.0.0.0/24', count: 9 }],
        },
        100,
      );
      const f = await store().failuresSince(T0);
      assert.deepEqual(f, { runsFailed: setState ? 1 : 0, deliveriesDead: 1, refused: 6 });
    });

    it('breakdownSince counts requests per bucket, path and code, delivery failures per channel and failed runs per hook', async () => {
      const r = run();
      await store().accept(command({ runs: [r] }));
      await h().setRunState?.(r.id, 'failed', T0 + 10);
      await addDeliveries(delivery({ to: 'x' }), delivery({ to: 'y' }));
      const [d, waiting] = await store().claimDeliveries('o', T0 + 100, 60_000, 2);
      await store().finishDelivery(d!.id, 'o', { kind: 'dead', error: 'gone', at: T0 + 100 }, T0 + 100);
      await store().finishDelivery(
        waiting!.id,
        'o',
        { kind: 'retry', nextAttemptAt: T0 + 5000, error: 'busy' },
        T0 + 100,
      );
      // In time order, as the ingress writes them.
      await store().recordReceived(received({ at: T0 - 5, status: 200 }));
      await store().recordReceived(received({ at: T0 + 5, status: 200 }));
      await store().recordReceived(received({ at: T0 + 61_000, status: 401, code: 'unauthorized' }));
      assert.equal(await store().refusalsStoredUntil(), null);
      await store().recordRefusals(
        {
          at: T0 + 60_000,
          windowMs: 60_000,
          counts: [{ status: 429, code: 'rate_limited', path: 'wake', bucket: 'b', count: 4 }],
        },
        100,
      );
      assert.equal(await store().refusalsStoredUntil(), T0 + 120_000);
      const b = await store().breakdownSince(T0, T0 + 180_000, 60_000);
      const { buckets, byCode } = b.requests.result();
      assert.deepEqual(
        buckets.map((x) => [x.at, x.accepted, x.refused]),
        [
          // The accepted command's own record (at T0) and the one at T0 + 5.
          [T0, 2, {}],
          [T0 + 60_000, 0, { rate_limited: 4, unauthorized: 1 }],
          [T0 + 120_000, 0, {}],
        ],
      );
      assert.deepEqual(byCode, [
        { status: 429, code: 'rate_limited', count: 4 },
        { status: 401, code: 'unauthorized', count: 1 },
      ]);
      // In the delivery states' words: dead-lettered is `failed`; pending after a failed attempt is `pendingRetry`.
      assert.deepEqual(b.channels, [{ channel: d!.channel, failed: 1, pendingRetry: 1 }]);
      assert.equal(
        b.runs.reduce((n, x) => n + x.failed, 0),
        h().setRunState ? 1 : 0,
      );
    });

    it('probeWrite commits and leaves nothing behind; after close it rejects with a StoreError', async () => {
      await store().probeWrite(T0);
      assert.deepEqual(await store().listNodes(), []);
      await store().close();
      await assert.rejects(store().probeWrite(T0), (err: unknown) => err instanceof StoreError);
    });
  });
}
