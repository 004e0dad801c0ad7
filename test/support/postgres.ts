/**
 * A PostgreSQL server for the driver's tests: `HOOKGATE_TEST_PG_URL`, by default postgres://postgres@127.0.0.1:5432/test.
 * Each test store gets a schema of its own (`hg_<random>`, dropped after), so tests run in parallel on one database.
 * When the server does not answer, the tests are skipped with the reason; with HOOKGATE_REQUIRE_SERVICES=1 that is
 * an error instead, so CI cannot pass by skipping.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PG_ADMIN_URL, skipWithoutPostgres } from './pg-database.js';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres.js';
import { passLockKey, type RetentionPass } from '../../src/store/postgres-retention.js';

/** The test server (pg-database.ts's admin URL: one home for it). */
export const PG_URL = PG_ADMIN_URL;

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  c.on('error', () => {});
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

/**
 * Why the PostgreSQL tests must be skipped, or undefined when the server answers (pg-database.ts checks, once per
 * process); with HOOKGATE_REQUIRE_SERVICES=1 a missing server throws instead.
 */
export async function postgresSkipReason(): Promise<string | undefined> {
  const why = await skipWithoutPostgres(PG_URL);
  return why ? `${why}; set HOOKGATE_TEST_PG_URL or start it; skipping the PostgreSQL tests` : undefined;
}

/** A fresh, empty schema; `drop` removes it with everything in it. */
export async function testSchema(): Promise<{ schema: string; drop: () => Promise<void> }> {
  const schema = `hg_${randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE SCHEMA ${schema}`));
  return { schema, drop: () => admin((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)).then(() => undefined) };
}

export function openTestStore(schema: string, over: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  return openPostgresStore({ url: PG_URL, schema, poolSize: 4, ...over });
}

/** Run SQL in a schema (test back doors: set a run's state, read a table). */
export function sqlIn<R extends pg.QueryResultRow = Record<string, unknown>>(
  schema: string,
  sql: string,
  params: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  return admin(async (c) => {
    await c.query(`SET search_path = ${schema}`);
    return c.query<R>(sql, params);
  });
}

/**
 * Another node's retention pass under way: a session of its own holding the pass's advisory lock in `schema`.
 * `release` ends the session, and the lock with it.
 */
export async function holdPassLock(schema: string, pass: RetentionPass): Promise<{ release: () => Promise<void> }> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(`SET search_path = ${schema}`);
    await c.query(`SELECT pg_advisory_lock(${passLockKey(pass)})`);
  } catch (err) {
    await c.end();
    throw err;
  }
  return { release: () => c.end() };
}
