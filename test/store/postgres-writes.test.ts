import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import pg from 'pg';
import type { PostgresStore } from '../../src/store/postgres.js';
import { RUN_CLAIM_WALK } from '../../src/store/postgres-writes.js';
import { PG } from '../../src/store/postgres-statements.js';
import { openTestStore, PG_URL, postgresSkipReason, sqlIn, testSchema } from '../support/postgres.js';
import { command, completion, received, run } from './contract.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const LEASE = 60_000;
const skip = await postgresSkipReason();

/** `n` queued runs straight into the table (as a burst of accepts leaves them), each on a session of its own. */
async function queueRuns(schema: string, n: number, prefix = 'burst'): Promise<void> {
  await sqlIn(
    schema,
    `INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel,
       timeout_seconds, allow_unsafe, content_source, hook_path, created_at, updated_at)
     SELECT $3 || '-' || i, 'queued', 'main', 'hook:' || $3 || '-' || i, 'isolated', 'Hook', 'm', 'now', 0, 'last', 60,
       0, 'webhook', 'agent', $1, $1
     FROM generate_series(1, $2::int) AS i`,
    [T0, n, prefix],
  );
}

/** The claim statement's parameters for a claim of `limit` from the queue's head (PgWrites.claimRuns). */
const claimParams = (limit: number, sweep: boolean) => [
  T0,
  'n',
  T0 + LEASE,
  limit,
  0,
  RUN_CLAIM_WALK / 2,
  RUN_CLAIM_WALK,
  sweep,
];

describe('postgres: the run claim walks the queue', { skip: skip ?? false, timeout: 60_000 }, () => {
  let schema: string;
  let drop: () => Promise<void>;
  let store: PostgresStore;
  before(async () => {
    ({ schema, drop } = await testSchema());
    store = await openTestStore(schema);
  });
  after(async () => {
    await store?.close();
    await drop?.();
  });
  beforeEach(async () => {
    await sqlIn(schema, 'DELETE FROM runs');
  });

  it("reaches the runs queued behind one session's many waiting runs, without walking all of those every claim", async () => {
    const busy = 'hook:busy';
    const first = run({ sessionKey: busy });
    const waiting = Array.from({ length: RUN_CLAIM_WALK + 50 }, () => run({ sessionKey: busy }));
    const others = [run(), run(), run()];
    await store.accept(command({ runs: [first], received: received() }));
    assert.deepEqual(
      (await store.claimRuns('n', T0, LEASE, 4)).map((r) => r.id),
      [first.id],
    );
    await store.accept(command({ runs: [...waiting, ...others], received: received() }));

    // The first claim walks its bound through the busy session's waiting runs (none may start before `first` ends)
    // and stops there; the next goes on from where it stopped and reaches the others.
    assert.deepEqual(await store.claimRuns('n', T0, LEASE, 4), [], 'the walk stopped at its bound');
    assert.deepEqual(
      (await store.claimRuns('n', T0, LEASE, 4)).map((r) => r.id),
      others.map((r) => r.id),
    );

    // The busy session goes on in its order once its run ends: the next claims walk from the queue's head again.
    assert.equal(await store.completeRun(completion(first.id, 'n')), true);
    assert.deepEqual(
      (await store.claimRuns('n', T0, LEASE, 4)).map((r) => r.id),
      [waiting[0]!.id],
    );
  });

  it('passes over a run another transaction holds locked and fills its limit from the runs after it', async () => {
    const runs = Array.from({ length: 5 }, () => run());
    await store.accept(command({ runs, received: received() }));
    const other = new pg.Client({ connectionString: PG_URL });
    await other.connect();
    try {
      await other.query(`SET search_path = ${schema}`);
      await other.query('BEGIN');
      await other.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [runs[0]!.id]);
      assert.deepEqual(
        (await store.claimRuns('n', T0, LEASE, 3)).map((r) => r.id),
        runs.slice(1, 4).map((r) => r.id),
      );
      await other.query('ROLLBACK');
    } finally {
      await other.end();
    }
    assert.deepEqual(
      (await store.claimRuns('n', T0, LEASE, 3)).map((r) => r.id),
      [runs[0]!.id, runs[4]!.id],
    );
  });

  it('reads a bounded number of buffers whatever the statistics: queued runs newer than the last ANALYZE', async () => {
    await sqlIn(schema, 'ANALYZE runs'); // an empty queue, as far as the planner knows
    await queueRuns(schema, 4000);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`SET search_path = ${schema}`);
      for (const sweep of [false, true]) {
        await client.query('BEGIN');
        const { rows } = await client.query(
          `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${PG.claimRuns.text}`,
          claimParams(16, sweep),
        );
        await client.query('ROLLBACK');
        const plan = (rows[0] as { 'QUERY PLAN': Array<{ Plan: Record<string, number> }> })['QUERY PLAN'][0]!.Plan;
        // 16 runs claimed: some 30 buffers each (the walk's seek, the session probe, the lock, the update). Walking
        // the 4,000 queued runs (each with its probe) reads some 12,000. The function's statements count in its scan.
        const buffers = plan['Shared Hit Blocks']! + plan['Shared Read Blocks']!;
        assert.ok(buffers < 1500, `sweep ${sweep}: ${buffers} buffers`);
        assert.equal(plan['Actual Rows'], 16, `sweep ${sweep}: leases 16 runs`);
      }
    } finally {
      await client.end();
    }
  });

  it('does not read the table whole with the plan a connection kept from when runs held a handful of rows', async () => {
    // A table of a page (TRUNCATE: the deletes before left it its pages), and statistics that stay those of the
    // ANALYZE below: a fresh install whose first requests were analysed.
    await sqlIn(schema, 'TRUNCATE runs');
    await sqlIn(schema, 'ALTER TABLE runs SET (autovacuum_enabled = false)');
    await queueRuns(schema, 5, 'first');
    await sqlIn(schema, 'ANALYZE runs');
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`SET search_path = ${schema}`);
      const claim = async (sweep: boolean) => {
        await client.query('BEGIN');
        try {
          const { rows } = await client.query({
            name: PG.claimRuns.name,
            text: PG.claimRuns.text,
            values: claimParams(16, sweep),
          });
          // This transaction's own scans of runs: the claim's and nothing else's.
          const { rows: scans } = await client.query<{ seq_scan: string; seq_tup_read: string }>(
            `SELECT seq_scan, seq_tup_read FROM pg_stat_xact_user_tables WHERE relid = 'runs'::regclass`,
          );
          return { leased: rows.filter((r) => r.id !== null).length, rowsScanned: Number(scans[0]!.seq_tup_read) };
        } finally {
          await client.query('ROLLBACK');
        }
      };
      // Past five executions on a connection PostgreSQL may keep a generic plan, made from the statistics of then.
      for (let i = 0; i < 8; i++) for (const sweep of [false, true]) await claim(sweep);
      const burst = 3000;
      await queueRuns(schema, burst, 'later');
      for (const sweep of [false, true]) {
        const { leased, rowsScanned } = await claim(sweep);
        assert.equal(leased, 16, `sweep ${sweep}: leases 16 runs`);
        // A plan that scans runs reads all of them at each of the walk's steps (some 150,000 rows here).
        assert.ok(rowsScanned < burst, `sweep ${sweep}: ${rowsScanned} rows of runs read by seq scans`);
      }
    } finally {
      await client.end();
    }
  });
});
