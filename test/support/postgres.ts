/**
 * A PostgreSQL server for the driver's tests: `HOOKGATE_TEST_PG_URL`, by default postgres://postgres@127.0.0.1:5432/test.
 * Each test store gets a schema of its own (`hg_<random>`, dropped after), so tests run in parallel on one database.
 * When the server does not answer, the tests are skipped with the reason; with HOOKGATE_REQUIRE_SERVICES=1 that is
 * an error instead, so CI cannot pass by skipping.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres.js';

export const PG_URL = process.env.HOOKGATE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';

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

/** Why the PostgreSQL tests must be skipped, or undefined when the server answers. */
export async function postgresSkipReason(): Promise<string | undefined> {
  try {
    await admin((c) => c.query('SELECT 1'));
    return undefined;
  } catch (err) {
    const url = new URL(PG_URL);
    url.password = url.password ? '***' : '';
    const why = `PostgreSQL at ${url} does not answer (${(err as Error).message}); set HOOKGATE_TEST_PG_URL or start it`;
    if (process.env.HOOKGATE_REQUIRE_SERVICES === '1') throw new Error(`HOOKGATE_REQUIRE_SERVICES=1 but ${why}`);
    return `${why}; skipping the PostgreSQL tests`;
  }
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
export function sqlIn<R extends pg.QueryResultRow = Record<string, unknown>>(schema: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult<R>> {
  return admin(async (c) => {
    await c.query(`SET search_path = ${schema}`);
    return c.query<R>(sql, params);
  });
}
