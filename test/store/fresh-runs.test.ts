/**
 * SQLite's fresh runs (src/store/fresh-runs.ts): an accepted run stays out of runs_by_state until a claim reaches it,
 * and every read of runs by state still sees it. The driver-agnostic behaviour is the store contract's; these are
 * the cases only this layout has: what is indexed when, a run that waits for its session, a fresh run moved by id,
 * the claim's bound on the walk, and a store migrated with runs in it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite-schema.js';
import { SqlitePages } from '../../src/store/sqlite-pages.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { NewRun, RunState } from '../../src/store/types.js';
import { removeDir, tempDir } from '../support/temp-dir.js';
import { command, completion, run } from './contract.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const LEASE = 30_000;

describe('sqlite fresh runs', () => {
  let dir: string;
  let store: SqliteStore;
  let pages: SqlitePages;
  beforeEach(() => {
    dir = tempDir();
    store = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline' });
    pages = new SqlitePages(store.db);
  });
  afterEach(async () => {
    await store.close();
    removeDir(dir);
  });

  const queue = async (...rs: NewRun[]) => {
    for (const r of rs) {
      const res = await store.accept(command({ runs: [r] }));
      assert.equal(res.kind, 'accepted');
    }
  };
  /** The runs runs_by_state holds, by id: [state, id] pairs in seq order. */
  const indexed = () =>
    (
      store.db
        .prepare('SELECT state, id FROM runs INDEXED BY runs_by_state WHERE fresh IS NULL ORDER BY seq')
        .all() as Array<{ state: string; id: string }>
    ).map((r) => [r.state, r.id]);
  const listed = async (state: 'queued' | 'running' | 'failed' | 'succeeded', limit = 50) => {
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await pages.pageRuns({ limit, state, ...(cursor ? { cursor } : {}) });
      ids.push(...page.items.map((r) => r.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return ids;
  };

  it('an accepted run is not indexed until a claim leases it; counts and lists see it meanwhile', async () => {
    const rs = [1, 2, 3].map((i) => run({ createdAt: T0 + i }));
    await queue(...rs);
    assert.deepEqual(indexed(), []);
    assert.deepEqual((await pages.queueDepths()).runs, { queued: 3, running: 0 });
    assert.deepEqual(await listed('queued'), [rs[2]!.id, rs[1]!.id, rs[0]!.id]);

    const claimed = await store.claimRuns('a', T0 + 10, LEASE, 2);
    assert.deepEqual(
      claimed.map((r) => r.id),
      [rs[0]!.id, rs[1]!.id],
    );
    assert.deepEqual(indexed(), [
      ['running', rs[0]!.id],
      ['running', rs[1]!.id],
    ]);
    assert.deepEqual((await pages.queueDepths()).runs, { queued: 1, running: 2 });
    assert.deepEqual(await listed('queued'), [rs[2]!.id]);
    assert.deepEqual(await listed('running'), [rs[1]!.id, rs[0]!.id]);
  });

  it('a fresh run whose session has an older open run is taken into the index as queued, and runs after it', async () => {
    const first = run({ sessionKey: 'shared', createdAt: T0 + 1 });
    const second = run({ sessionKey: 'shared', createdAt: T0 + 2 });
    const other = run({ createdAt: T0 + 3 });
    await queue(first, second, other);
    const claimed = await store.claimRuns('a', T0 + 10, LEASE, 5);
    assert.deepEqual(
      claimed.map((r) => r.id),
      [first.id, other.id],
    );
    // second waits in the index, behind first; nothing is fresh any more.
    assert.deepEqual(indexed(), [
      ['running', first.id],
      ['queued', second.id],
      ['running', other.id],
    ]);
    assert.deepEqual(await store.claimRuns('a', T0 + 11, LEASE, 5), []);
    assert.equal(await store.completeRun(completion(first.id, 'a', { finishedAt: T0 + 20, state: 'succeeded' })), true);
    assert.deepEqual(
      (await store.claimRuns('a', T0 + 21, LEASE, 5)).map((r) => r.id),
      [second.id],
    );
    // A run accepted after them is fresh again, and claimed after the indexed ones.
    const later = run({ createdAt: T0 + 30 });
    await queue(later);
    assert.deepEqual(indexed().length, 3);
    assert.deepEqual(
      (await store.claimRuns('a', T0 + 31, LEASE, 5)).map((r) => r.id),
      [later.id],
    );
  });

  it('a fresh run failed by id stays fresh in its new state: never claimed, listed as failed, requeued and claimed', async () => {
    const a = run({ createdAt: T0 + 1 });
    const b = run({ createdAt: T0 + 2 });
    await queue(a, b);
    await store.failRun(a.id, 'refused before a claim', T0 + 5);
    assert.deepEqual((await pages.queueDepths()).runs, { queued: 1, running: 0 });
    assert.deepEqual(await listed('failed'), [a.id]);
    assert.deepEqual(await listed('queued'), [b.id]);

    assert.deepEqual(
      (await store.claimRuns('a', T0 + 10, LEASE, 5)).map((r) => r.id),
      [b.id],
    );
    // The claim took the failed run into the index under its state on the way.
    assert.deepEqual(indexed(), [
      ['failed', a.id],
      ['running', b.id],
    ]);
    assert.deepEqual(await listed('failed'), [a.id]);
    assert.equal((await store.requeueRun(a.id, T0 + 20))?.state, 'queued');
    assert.deepEqual(
      (await store.claimRuns('a', T0 + 21, LEASE, 5)).map((r) => r.id),
      [a.id],
    );
  });

  it('a claim walks at most 256 fresh runs: a burst in one session is taken in over several claims', async () => {
    const burst = Array.from({ length: 600 }, (_, i) => run({ sessionKey: 'burst', createdAt: T0 + i }));
    const after = run({ createdAt: T0 + 1000 });
    await store.accept(command({ runs: burst }));
    await queue(after);
    const fresh = () => (store.db.prepare('SELECT COUNT(*) AS n FROM runs WHERE fresh = 1').get() as { n: number }).n;

    assert.deepEqual(
      (await store.claimRuns('a', T0 + 2000, LEASE, 2)).map((r) => r.id),
      [burst[0]!.id],
    );
    assert.ok(fresh() >= 601 - 256, `${fresh()} fresh after one claim`);
    assert.deepEqual(await store.claimRuns('a', T0 + 2001, LEASE, 2), []);
    // The third claim reaches the run after the burst; the burst's runs wait in the index, in order.
    assert.deepEqual(
      (await store.claimRuns('a', T0 + 2002, LEASE, 2)).map((r) => r.id),
      [after.id],
    );
    assert.equal(fresh(), 0);
    assert.equal((await pages.queueDepths()).runs.queued, 599);
    assert.deepEqual(
      (await listed('queued', 100)).reverse(),
      burst.slice(1).map((r) => r.id),
    );
  });

  it('pages of queued runs cross from the fresh runs to the indexed ones without a gap or a repeat', async () => {
    const waiting = Array.from({ length: 7 }, (_, i) => run({ sessionKey: 'w', createdAt: T0 + i }));
    await store.accept(command({ runs: waiting }));
    await store.claimRuns('a', T0 + 100, LEASE, 1); // leases waiting[0]; waiting[1..6] into the index as queued
    const fresh = Array.from({ length: 5 }, (_, i) => run({ createdAt: T0 + 200 + i }));
    await store.accept(command({ runs: fresh }));
    const expected = [...waiting.slice(1), ...fresh].map((r) => r.id).reverse();
    for (const limit of [1, 2, 3, 5, 11, 50])
      assert.deepEqual(await listed('queued', limit), expected, `limit ${limit}`);
    assert.deepEqual((await pages.queueDepths()).runs, { queued: 11, running: 1 });
  });

  it('a store migrated with runs in it keeps them indexed and claimable; runs accepted after are fresh', async () => {
    await store.close();
    removeDir(dir);
    dir = tempDir();
    const path = join(dir, 'hookgate.db');
    const old = new Database(path);
    const before = SQLITE_MIGRATIONS.length - 1;
    for (const step of SQLITE_MIGRATIONS.slice(0, before)) old.exec(step);
    old.pragma(`user_version = ${before}`);
    const ins = old.prepare(
      `INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel,
         timeout_seconds, allow_unsafe, content_source, hook_path, created_at, updated_at)
       VALUES (?, ?, 'main', ?, 'isolated', 'Hook', 'm', 'now', 1, 'last', 600, 0, 'webhook', 'agent', ?, ?)`,
    );
    ins.run('old-done', 'succeeded', 'hook:old-done', T0, T0);
    ins.run('old-queued', 'queued', 'hook:old-queued', T0 + 1, T0 + 1);
    old.close();

    store = new SqliteStore({ path, writer: 'inline' });
    pages = new SqlitePages(store.db);
    assert.deepEqual(indexed(), [
      ['succeeded', 'old-done'],
      ['queued', 'old-queued'],
    ]);
    const next = run({ createdAt: T0 + 10 });
    await queue(next);
    assert.deepEqual((await pages.queueDepths()).runs, { queued: 2, running: 0 });
    assert.deepEqual(
      (await store.claimRuns('a', T0 + 20, LEASE, 5)).map((r) => r.id),
      ['old-queued', next.id],
    );
  });
});

/** What the store must do, as the claims did when every run was indexed: runs in accept order, each with its state. */
interface ModelRun {
  id: string;
  session: string;
  state: RunState;
}

/** The claimable runs, oldest first: queued, and no older queued or running run in their session. */
function modelClaim(runs: ModelRun[], limit: number): ModelRun[] {
  const open = new Set<string>();
  const claimed: ModelRun[] = [];
  for (const r of runs) {
    if (r.state === 'queued' && !open.has(r.session) && claimed.length < limit) claimed.push(r);
    if (r.state === 'queued' || r.state === 'running') open.add(r.session);
  }
  return claimed;
}

type Step =
  | { op: 'accept'; session: number | null; count: number }
  | { op: 'claim'; limit: number }
  | { op: 'finish'; pick: number; state: 'succeeded' | 'failed' }
  | { op: 'release'; pick: number }
  | { op: 'fail'; pick: number }
  | { op: 'requeue'; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('accept' as const),
    session: fc.option(fc.nat(2)),
    count: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({ op: fc.constant('claim' as const), limit: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ op: fc.constant('finish' as const), pick: fc.nat(), state: fc.constantFrom('succeeded', 'failed') }),
  fc.record({ op: fc.constant('release' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('fail' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('requeue' as const), pick: fc.nat() }),
);

describe('sqlite fresh runs, against a model of the claims', () => {
  it('any sequence of accepts, claims, finishes, releases, failures and requeues claims, counts and lists as the model does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const dir = tempDir();
        const store = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline' });
        const pages = new SqlitePages(store.db);
        const model: ModelRun[] = [];
        const inState = (state: RunState) => model.filter((r) => r.state === state);
        let t = T0;
        try {
          for (const s of steps) {
            t += 10;
            if (s.op === 'accept') {
              const rs = Array.from({ length: s.count }, () =>
                run({ createdAt: t, ...(s.session === null ? {} : { sessionKey: `s${s.session}` }) }),
              );
              await store.accept(command({ runs: rs }));
              for (const r of rs) model.push({ id: r.id, session: r.sessionKey, state: 'queued' });
            } else if (s.op === 'claim') {
              const want = modelClaim(model, s.limit);
              const got = await store.claimRuns('a', t, LEASE, s.limit);
              assert.deepEqual(
                got.map((r) => r.id),
                want.map((r) => r.id),
              );
              for (const r of want) r.state = 'running';
            } else if (s.op === 'finish' || s.op === 'release') {
              const running = inState('running');
              const r = running[s.pick % Math.max(1, running.length)];
              if (!r) continue;
              if (s.op === 'finish') {
                assert.equal(await store.completeRun(completion(r.id, 'a', { finishedAt: t, state: s.state })), true);
                r.state = s.state;
              } else {
                await store.releaseRuns('a', [r.id], t, 'released');
                r.state = 'queued';
              }
            } else if (s.op === 'fail') {
              const r = model[s.pick % Math.max(1, model.length)];
              if (!r) continue;
              await store.failRun(r.id, 'failed by id', t);
              r.state = 'failed';
            } else {
              const done = model.filter((r) => r.state === 'failed' || r.state === 'succeeded');
              const r = done[s.pick % Math.max(1, done.length)];
              if (!r) continue;
              assert.equal((await store.requeueRun(r.id, t))?.state, 'queued');
              r.state = 'queued';
            }
            assert.deepEqual((await pages.queueDepths()).runs, {
              queued: inState('queued').length,
              running: inState('running').length,
            });
          }
          for (const state of ['queued', 'running', 'succeeded', 'failed'] as const) {
            const page = await pages.pageRuns({ limit: 1000, state });
            assert.deepEqual(
              page.items.map((r) => r.id),
              inState(state)
                .map((r) => r.id)
                .reverse(),
              state,
            );
          }
        } finally {
          await store.close();
          removeDir(dir);
        }
      }),
      { numRuns: 60 },
    );
  });
});
