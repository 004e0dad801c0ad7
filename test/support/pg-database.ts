/**
 * A fresh PostgreSQL database per test server or cluster, made through the machine's server and dropped after:
 * `CREATE DATABASE hg_e2e_<pid>_<random>` on the admin connection (default: the `test` database on 127.0.0.1:5432,
 * user postgres, trust auth; `HOOKGATE_TEST_PG_URL` overrides it). Nothing here needs the hookgate driver: the
 * server under test gets the new database's URL and runs its own migrations into it.
 *
 * Databases whose test process died before dropping them (kill of the runner) are dropped by the next process that
 * makes one: their name carries the pid, and a database whose pid is no longer alive and that has no connection is
 * gone for good.
 *
 * Without a reachable server, `pgUnavailable()` says why, and tests skip with that reason, unless
 * `HOOKGATE_REQUIRE_SERVICES=1` (CI), where `requirePostgres` fails instead.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_ADMIN_URL = process.env.HOOKGATE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const PREFIX = 'hg_e2e_';

export interface TestDatabase {
  name: string;
  /** The URL the server under test is given. */
  url: string;
  /** One query on a short-lived connection to the test database (for assertions). */
  query<R extends Record<string, unknown> = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Drop it (connections forced off); nothing happens when it is gone already. */
  drop(): Promise<void>;
}

/** `url` with its database name replaced. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

let checked: Promise<string | undefined> | undefined;

/** Why the test PostgreSQL cannot be used, or undefined when it can (checked once per process). */
export function pgUnavailable(adminUrl = PG_ADMIN_URL): Promise<string | undefined> {
  checked ??= (async () => {
    const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
    try {
      await c.connect();
      await c.query('SELECT 1');
      return undefined;
    } catch (err) {
      return `PostgreSQL at ${adminUrl.replace(/:[^:@/]*@/, ':***@')} is not reachable: ${(err as Error).message}`;
    } finally {
      await c.end().catch(() => undefined);
    }
  })();
  return checked;
}

export const servicesRequired = () => process.env.HOOKGATE_REQUIRE_SERVICES === '1';

/**
 * For a test's `skip` option: false when PostgreSQL is there (run), the reason when it is not (skip); under
 * HOOKGATE_REQUIRE_SERVICES=1 it throws instead, so the missing service fails the run.
 */
export async function skipWithoutPostgres(adminUrl = PG_ADMIN_URL): Promise<string | false> {
  const why = await pgUnavailable(adminUrl);
  if (!why) return false;
  if (servicesRequired()) throw new Error(`HOOKGATE_REQUIRE_SERVICES=1 and ${why}`);
  return why;
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const live = new Set<TestDatabase>();
let reaped = false;

/** Drops the databases that dead test processes left behind (once per process, best effort). */
async function reapLeftovers(c: pg.Client): Promise<void> {
  if (reaped) return;
  reaped = true;
  const rows = (await c.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE '${PREFIX}%'`))
    .rows;
  for (const { datname } of rows) {
    const pid = Number(/^hg_e2e_(\d+)_/.exec(datname)?.[1]);
    if (!pid || pidAlive(pid)) continue;
    await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
  }
}

/** A new empty database (owned by the admin user); `drop()` it when done (also done by `dropAllTestDatabases`). */
export async function createTestDatabase(adminUrl = PG_ADMIN_URL): Promise<TestDatabase> {
  const name = `${PREFIX}${process.pid}_${randomBytes(5).toString('hex')}`;
  await withClient(adminUrl, async (c) => {
    await reapLeftovers(c).catch(() => undefined);
    await c.query(`CREATE DATABASE "${name}"`);
  });
  const url = withDatabase(adminUrl, name);
  let dropped = false;
  const db: TestDatabase = {
    name,
    url,
    query: async <R extends Record<string, unknown>>(sql: string, params: unknown[] = []) =>
      withClient(url, async (c) => (await c.query(sql, params)).rows as R[]),
    async drop() {
      if (dropped) return;
      dropped = true;
      live.delete(db);
      await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
  live.add(db);
  return db;
}

/** Drop every database this process made and has not dropped yet. */
export async function dropAllTestDatabases(): Promise<void> {
  for (const db of [...live]) await db.drop().catch(() => undefined);
}
