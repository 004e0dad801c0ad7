import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { StoreError } from '../../src/errors.js';
import type { PostgresStore } from '../../src/store/postgres.js';
import { EXPIRED_SWEEP_MS } from '../../src/store/postgres-writes.js';
import type { ClusterNotice, Run } from '../../src/store/types.js';
import { openTestStore, postgresSkipReason, sqlIn, testSchema } from '../support/postgres.js';
import { waitFor } from '../support/wait.js';
import { command, completion, delivery, event, message, received, run } from './contract.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const LEASE = 60_000;
const skip = await postgresSkipReason();

/** Rows of a table of the test schema. */
async function count(schema: string, table: string, where = 'true'): Promise<number> {
  const { rows } = await sqlIn<{ n: number }>(schema, `SELECT count(*)::int AS n FROM ${table} WHERE ${where}`);
  return rows[0]!.n;
}

describe('postgres: the runtime writes in batches', { skip: skip ?? false, timeout: 60_000 }, () => {
  let schema: string;
  let drop: () => Promise<void>;
  let a: PostgresStore;
  let b: PostgresStore;
  before(async () => {
    ({ schema, drop } = await testSchema());
    a = await openTestStore(schema);
    b = await openTestStore(schema);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await drop?.();
  });
  beforeEach(async () => {
    await sqlIn(
      schema,
      'DELETE FROM runs; DELETE FROM deliveries; DELETE FROM system_events; DELETE FROM session_messages',
    );
  });

  async function claimed(n: number, owner = 'nodeA'): Promise<Run[]> {
    await a.accept(command({ runs: Array.from({ length: n }, () => run()), received: received() }));
    const runs = await a.claimRuns(owner, T0, LEASE, n);
    assert.equal(runs.length, n);
    return runs;
  }

  it('completions of one turn are one statement (one transaction); each writes its event, deliveries and transcript', async () => {
    const runs = await claimed(20);
    const before = a.db.queries;
    const results = await Promise.all(
      runs.map((r) =>
        a.completeRun(
          completion(r.id, 'nodeA', {
            events: [event({ sessionKey: r.sessionKey, runId: r.id, text: `summary ${r.id}` })],
            deliveries: [delivery({ runId: r.id, sessionKey: r.sessionKey, channel: 'log', to: '' })],
            messages: [
              message({ sessionKey: r.sessionKey, runId: r.id, content: 'prompt' }),
              message({ sessionKey: r.sessionKey, runId: r.id, role: 'assistant', content: 'reply' }),
            ],
          }),
        ),
      ),
    );
    assert.equal(a.db.queries - before, 1);
    assert.deepEqual(
      results,
      runs.map(() => true),
    );
    assert.equal(await count(schema, 'runs', "state = 'succeeded' AND lease_owner IS NULL"), 20);
    assert.equal(await count(schema, 'system_events'), 20);
    assert.equal(await count(schema, 'deliveries', "state = 'pending'"), 20);
    // A transcript keeps its turns in order: the prompt before the reply, per run.
    const { rows } = await sqlIn<{ run_id: string; roles: string }>(
      schema,
      "SELECT run_id, string_agg(role, ',' ORDER BY seq) AS roles FROM session_messages GROUP BY run_id",
    );
    assert.equal(rows.length, 20);
    for (const r of rows) assert.equal(r.roles, 'user,assistant');
  });

  it('in one batch, a completion whose lease was lost writes nothing and answers false; the others commit', async () => {
    const [mine, lost] = await claimed(2);
    // The lease of `lost` expired and another node took it (a crash between claim and completion, seen from here).
    await a.renewRunLeases('nodeA', [mine!.id], T0 + 2 * LEASE);
    const taken = await b.claimRuns('nodeB', T0 + LEASE + 1, LEASE, 5);
    assert.deepEqual(
      taken.map((r) => [r.id, r.attempts]),
      [[lost!.id, 2]],
    );
    const results = await Promise.all([
      a.completeRun(completion(mine!.id, 'nodeA', { deliveries: [delivery({ runId: mine!.id })] })),
      a.completeRun(
        completion(lost!.id, 'nodeA', {
          deliveries: [delivery({ runId: lost!.id })],
          events: [event({ runId: lost!.id })],
        }),
      ),
    ]);
    assert.deepEqual(results, [true, false]);
    assert.equal((await b.getRun(lost!.id))?.state, 'running');
    assert.equal(await count(schema, 'deliveries', `run_id = '${lost!.id}'`), 0);
    assert.equal(await count(schema, 'system_events'), 0);
    assert.equal(await b.completeRun(completion(lost!.id, 'nodeB')), true);
  });

  it('a node that dies between claim and completion: its run is claimed again within a sweep period of its lease, same id', async () => {
    const dying = await openTestStore(schema);
    await dying.accept(command({ runs: [run()], received: received() }));
    const [r] = await dying.claimRuns('dying', T0, LEASE, 1);
    await dying.close(); // no completion, no release: a crash as far as the database knows
    assert.deepEqual(await a.claimRuns('nodeA', T0 + LEASE - 1, LEASE, 5), []);
    const again = await a.claimRuns('nodeA', T0 + LEASE + EXPIRED_SWEEP_MS, LEASE, 5);
    assert.deepEqual(
      again.map((x) => [x.id, x.attempts]),
      [[r!.id, 2]],
    );
    assert.equal(await a.completeRun(completion(r!.id, 'nodeA')), true);
    assert.equal((await a.getRun(r!.id))?.state, 'succeeded');
  });

  it('one completion whose rows break a constraint fails alone; the others of its batch are committed', async () => {
    const runs = await claimed(4);
    const dup = delivery();
    const [r0, r1, r2, r3] = runs;
    const results = await Promise.allSettled([
      a.completeRun(completion(r0!.id, 'nodeA', { deliveries: [delivery({ runId: r0!.id })] })),
      a.completeRun(completion(r1!.id, 'nodeA', { deliveries: [dup, { ...dup }] })), // the same delivery id twice
      a.completeRun(completion(r2!.id, 'nodeA')),
      a.completeRun(completion(r3!.id, 'nodeA')),
    ]);
    assert.deepEqual(
      results.map((x) => x.status),
      ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
    );
    assert.ok((results[1] as PromiseRejectedResult).reason instanceof StoreError);
    assert.equal((await a.getRun(r1!.id))?.state, 'running', 'nothing of the failed completion was written');
    for (const r of [r0!, r2!, r3!]) assert.equal((await a.getRun(r.id))?.state, 'succeeded');
  });

  it('delivery outcomes of one turn are one statement, each fenced by its lease', async () => {
    const ds = Array.from({ length: 6 }, (_, i) => delivery({ channel: 'log', to: '', createdAt: T0 + i }));
    await a.completeRun(completion((await claimed(1))[0]!.id, 'nodeA', { deliveries: ds }));
    const got = await a.claimDeliveries('nodeA', T0 + 10, LEASE, 4, 63);
    assert.deepEqual(
      got.map((d) => d.id),
      ds.map((d) => d.id),
      'one route: its head and every follower, in order, in one claim',
    );
    const before = a.db.queries;
    await Promise.all([
      ...got.slice(0, 4).map((d) => a.finishDelivery(d.id, 'nodeA', { kind: 'delivered', at: T0 + 20 }, T0 + 20)),
      a.finishDelivery(got[4]!.id, 'nodeA', { kind: 'dead', error: 'refused', at: T0 + 20 }, T0 + 20),
      a.finishDelivery(got[5]!.id, 'nodeB', { kind: 'delivered', at: T0 + 20 }, T0 + 20), // not nodeB's lease
    ]);
    assert.equal(a.db.queries - before, 1);
    assert.deepEqual(
      (await Promise.all(ds.map((d) => a.getDelivery(d.id)))).map((d) => d?.state),
      ['delivered', 'delivered', 'delivered', 'delivered', 'dead', 'pending'],
    );
    assert.equal((await a.getDelivery(ds[4]!.id))?.lastError, 'refused');
  });

  it('claims deliveries in batches: each route its head and followers, up to the first not due; none of them to another node', async () => {
    const route = Array.from({ length: 5 }, (_, i) => delivery({ channel: 'log', to: '', createdAt: T0 + i }));
    const other = Array.from({ length: 3 }, (_, i) => delivery({ channel: 'slack', to: 'C1', createdAt: T0 + 10 + i }));
    const later = delivery({ channel: 'slack', to: 'C1', createdAt: T0 + 5000 }); // not due at the claim: the route stops there
    const after = delivery({ channel: 'slack', to: 'C1', createdAt: T0 + 20 });
    await a.completeRun(
      completion((await claimed(1))[0]!.id, 'nodeA', { deliveries: [...route, ...other, later, after] }),
    );
    const [got, none] = await Promise.all([
      a.claimDeliveries('nodeA', T0 + 100, LEASE, 16, 63),
      b.claimDeliveries('nodeB', T0 + 100, LEASE, 16, 63),
    ]);
    const all = [...got, ...none].map((d) => d.id);
    assert.deepEqual(new Set(all).size, all.length, 'no delivery handed out twice');
    // Whoever claimed a route first has all of it that is claimable, in order; the other has none of it.
    const ids = (ds: readonly { id: string }[]) => ds.map((d) => d.id);
    for (const claimedRoute of [ids(route), ids(other)]) {
      const holder = [got, none].find((g) => g.some((d) => d.id === claimedRoute[0]))!;
      assert.deepEqual(
        ids(holder).filter((id) => claimedRoute.includes(id)),
        claimedRoute,
      );
    }
    assert.ok(!all.includes(later.id) && !all.includes(after.id), 'a follower after one not due is not claimed');
  });

  it('one notice per batch: twenty completions with deliveries send one "deliveries" notice', async () => {
    const runs = await claimed(20);
    const got: ClusterNotice[] = [];
    const stop = b.subscribe((n) => got.push(n));
    await b.noticesReady();
    await Promise.all(
      runs.map((r) =>
        a.completeRun(completion(r.id, 'nodeA', { deliveries: [delivery({ runId: r.id, channel: 'log', to: '' })] })),
      ),
    );
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && got.length === 0) await new Promise((res) => setTimeout(res, 20));
    // A notice sent per completion would arrive with the first: the batch's one commit delivers them all at once.
    await new Promise((res) => setTimeout(res, 300));
    stop();
    assert.deepEqual(got, [{ kind: 'deliveries' }]);
  });

  it('no "deliveries" notice for a batch whose deliveries fit in the writing node\'s outbox; one for a batch that does not', async () => {
    const runs = await claimed(4);
    const got: ClusterNotice[] = [];
    const stop = b.subscribe((n) => got.push(n));
    await b.noticesReady();
    const complete = (r: Run) =>
      a.completeRun(completion(r.id, 'nodeA', { deliveries: [delivery({ runId: r.id, channel: 'log', to: '' })] }));
    try {
      a.outboxSpare(() => 2);
      await Promise.all(runs.slice(0, 2).map(complete)); // two deliveries, two free slots: a's outbox sends them
      a.outboxSpare(() => 1);
      await Promise.all(runs.slice(2).map(complete)); // two deliveries, one free slot: the others are told
      await waitFor('the notice of the second batch', () => got.length > 0);
      await new Promise((res) => setTimeout(res, 300)); // a notice of the first batch would have come first
    } finally {
      a.outboxSpare(() => 0);
      stop();
    }
    assert.deepEqual(got, [{ kind: 'deliveries' }]);
    assert.equal(await count(schema, 'deliveries'), 4, 'every delivery is queued either way');
  });

  it('a node is not woken by its own notices (it told its runtime when it committed); the other nodes are', async () => {
    const gotA: ClusterNotice[] = [];
    const gotB: ClusterNotice[] = [];
    const stopA = a.subscribe((n) => gotA.push(n));
    const stopB = b.subscribe((n) => gotB.push(n));
    await Promise.all([a.noticesReady(), b.noticesReady()]);
    await a.accept(command({ runs: [run()], received: received() }));
    await a.shareLockout('198.51.100.0/24', T0 + 9000);
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && gotB.length < 2) await new Promise((res) => setTimeout(res, 20));
    await new Promise((res) => setTimeout(res, 300)); // A's copy of the same NOTIFY arrives with B's
    stopA();
    stopB();
    assert.deepEqual(
      gotB.map((n) => n.kind),
      ['runs', 'lockout'],
    );
    assert.deepEqual(
      gotA.map((n) => n.kind),
      ['lockout'],
      'only the kinds a node tells itself directly are dropped',
    );
  });

  it('a statement prepared before another node added a column still answers (the connection is replaced)', async () => {
    const own = await testSchema();
    const one = await openTestStore(own.schema, { poolSize: 1 });
    try {
      await one.accept(command({ runs: [run()], received: received() }));
      const [r] = await one.claimRuns('nodeA', T0, LEASE, 1);
      assert.equal((await one.getRun(r!.id))?.id, r!.id); // prepared on the pool's one connection
      await sqlIn(own.schema, 'ALTER TABLE runs ADD COLUMN added_later integer');
      assert.equal((await one.getRun(r!.id))?.id, r!.id);
      assert.equal((await one.getRun(r!.id))?.state, 'running');
    } finally {
      await one.close();
      await own.drop();
    }
  });
});
