/**
 * Schema migrations of the PostgreSQL driver, and the connection check of `config check --connect`. Migrations run
 * at open in one transaction holding an advisory lock keyed by the schema, so nodes starting together migrate once
 * (the others wait, then find nothing to do) and parallel test schemas do not wait on each other.
 */
import pg from 'pg';
import { StoreError } from '../errors.js';
import { pgClientConfig, pgError, type PgConnectOptions } from './postgres-connect.js';
import { PG_MIGRATIONS, PG_VERSION_TABLE } from './postgres-schema.js';
import { assertSchemaUsable, type SchemaPolicy } from './schema-version.js';

/** How an open treats the database's schema: see schema-version.ts. */
export interface PgSchemaOptions {
  schemaPolicy?: SchemaPolicy;
  /** Told the schema version found at open and the one the database has now (equal: nothing migrated; found 0: created). */
  onSchema?: (from: number, to: number) => void;
}

/** The schema version this hookgate knows (the number of its migration steps). */
export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/**
 * With "migrate", bring the connection's schema to PG_SCHEMA_VERSION; with "current", only check that it is there
 * (StoreSchemaError when older; newer is refused either way). `where` names the database for people (no password).
 * Returns the schema's name (for the notice channel).
 */
export async function migrate(
  client: pg.ClientBase,
  now: number,
  where: string,
  opts: PgSchemaOptions = {},
): Promise<string> {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
    const schema = rows[0]?.schema;
    if (!schema)
      throw new StoreError(
        "no PostgreSQL schema to create hookgate's tables in: the search_path names none that exists",
      );
    const policy = opts.schemaPolicy ?? 'migrate';
    if (policy === 'current') {
      // Nothing is created or locked: a reader only looks.
      const present = (
        await client.query<{ present: boolean }>(`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`)
      ).rows[0]!.present;
      const found = present ? await versionOf(client) : 0;
      assertSchemaUsable(found, PG_SCHEMA_VERSION, where, policy);
      await client.query('COMMIT');
      opts.onSchema?.(found, found);
      return schema;
    }
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`hookgate:migrate:${schema}`]);
    await client.query(PG_VERSION_TABLE);
    const found = await versionOf(client);
    assertSchemaUsable(found, PG_SCHEMA_VERSION, where, policy);
    for (let v = found; v < PG_SCHEMA_VERSION; v++) {
      await client.query(PG_MIGRATIONS[v]!);
      await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [v + 1, now]);
    }
    await client.query('COMMIT');
    opts.onSchema?.(found, PG_SCHEMA_VERSION);
    return schema;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

async function versionOf(client: pg.ClientBase): Promise<number> {
  const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
  return rows[0]?.v ?? 0;
}

/**
 * Connect, `SELECT 1`, and read the schema version if the version table exists; migrates nothing. For
 * `config check --connect`. Rejects with a StoreError (no password in it) when PostgreSQL cannot be reached.
 */
export async function checkPostgres(
  url: string,
  opts: Omit<PgConnectOptions, 'url'> = {},
): Promise<{ serverVersion: string; schemaVersion: number | null; knownVersion: number }> {
  const client = new pg.Client(pgClientConfig({ ...opts, url }));
  client.on('error', () => {}); // a drop after the check: nothing to do
  try {
    await client.connect();
    await client.query('SELECT 1');
    const { rows } = await client.query<{ server_version: string; present: boolean }>(
      `SELECT current_setting('server_version') AS server_version, to_regclass('schema_migrations') IS NOT NULL AS present`,
    );
    const row = rows[0]!;
    return {
      serverVersion: row.server_version,
      schemaVersion: row.present ? await versionOf(client) : null,
      knownVersion: PG_SCHEMA_VERSION,
    };
  } catch (err) {
    throw pgError('connection check', err, url);
  } finally {
    await client.end().catch(() => {});
  }
}
