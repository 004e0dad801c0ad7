/**
 * `hookgate store copy`: a SQLite store's pending and historic work into PostgreSQL, table by table, column by
 * column (the PostgreSQL schema mirrors SQLite's final tables: postgres-schema.ts). Batches are committed one
 * transaction each with `ON CONFLICT DO NOTHING`, so a copy that stopped half-way, or ran twice, copies only what is
 * missing; then each identity sequence is moved past the copied `seq`s so new rows never clash with them.
 *
 * The source is opened read-only and must have this hookgate's schema (it is not migrated here); the destination is
 * opened through `openStore` first, which creates or migrates its schema (under the driver's advisory lock).
 */
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';
import { scrubUrlSecrets } from '../config/database-url.js';
import { StoreCopyError } from '../errors.js';
import { logPath, safeUrl } from '../text-safe.js';
import { openStore } from './open.js';
import { SQLITE_MIGRATIONS } from './sqlite-schema.js';
import { NODE_LIVE_MS } from './types.js';

/** Not copied: each node registers itself in the database it runs on. */
const NOT_COPIED = new Set(['nodes']);
/** Rows per INSERT (and per transaction), kept under PostgreSQL's 65535 parameters per statement. */
const MAX_BATCH_ROWS = 500;
const MAX_PARAMS = 60_000;

export interface CopyTableResult {
  table: string;
  /** Rows in the source. */
  total: number;
  /** Rows inserted by this run. */
  copied: number;
  /** Rows the destination already held (an earlier copy): left as they are. */
  present: number;
}

export interface CopyOptions {
  /** The SQLite store file. */
  from: string;
  /** The PostgreSQL URL (it carries the password: never shown, see safeUrl). */
  to: string;
  /** Copy even though the source's node registry shows a live service. */
  force?: boolean;
  /** Rows per batch (tests use small ones). */
  batchRows?: number;
  now?: number;
  /** Called before each table (done 0) and after each committed batch. */
  onProgress?: (table: string, done: number, total: number) => void;
}

interface PgColumn {
  name: string;
  type: string;
}

export async function copySqliteToPostgres(opts: CopyOptions): Promise<CopyTableResult[]> {
  const source = openSource(opts.from, opts.force ?? false, opts.now ?? Date.now());
  try {
    await migrateDestination(opts.to);
    const client = new pg.Client({ connectionString: opts.to, application_name: 'hookgate store copy' });
    try {
      await connect(client, opts.to);
      const results: CopyTableResult[] = [];
      for (const table of sourceTables(source)) {
        results.push(await copyTable(source, client, table, opts));
      }
      return results;
    } finally {
      await client.end().catch(() => {});
    }
  } finally {
    source.close();
  }
}

/** The source, read-only, refused unless it is a stopped store with exactly this hookgate's schema. */
function openSource(path: string, force: boolean, now: number): Database.Database {
  const shown = logPath(path, 300);
  if (!existsSync(path))
    throw new StoreCopyError(
      'copy_source_missing',
      `no SQLite store at ${shown}: --from names the store file (storage.path of the old config, e.g. data/hookgate.db)`,
    );
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new StoreCopyError('copy_source_invalid', `cannot open ${shown} read-only: ${(err as Error).message}`, {
      cause: err,
    });
  }
  try {
    let version: number;
    try {
      version = Number(db.pragma('user_version', { simple: true }));
    } catch (err) {
      throw new StoreCopyError(
        'copy_source_invalid',
        `${shown} is not a SQLite database (${(err as { code?: string }).code ?? 'error'}): --from names the store file`,
        { cause: err },
      );
    }
    const known = SQLITE_MIGRATIONS.length;
    if (version === 0)
      throw new StoreCopyError('copy_source_invalid', `${shown} is not a hookgate store (no hookgate schema in it)`);
    if (version > known) {
      throw new StoreCopyError(
        'copy_source_newer',
        `${shown} has schema version ${version}, written by a newer hookgate (this one knows ${known}): copy it with that version`,
      );
    }
    if (version < known) {
      throw new StoreCopyError(
        'copy_source_outdated',
        `${shown} has schema version ${version}, older than this hookgate's (${known}): run \`hookgate store migrate --config <its config>\` (or start this hookgate once on it), then copy`,
      );
    }
    const live = db
      .prepare('SELECT id, last_seen_at FROM nodes WHERE last_seen_at > ? ORDER BY last_seen_at DESC')
      .all(now - NODE_LIVE_MS) as Array<{ id: string; last_seen_at: number }>;
    if (live.length && !force) {
      const seen = Math.max(0, Math.round((now - live[0]!.last_seen_at) / 1000));
      throw new StoreCopyError(
        'copy_source_in_use',
        `a hookgate service is running on ${shown} (node ${live[0]!.id}, seen ${seen} s ago): stop it first, so that nothing it accepts after the copy is left behind (--force copies anyway)`,
      );
    }
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** Open (and close) the destination through the store driver: that creates or migrates its schema. */
async function migrateDestination(url: string): Promise<void> {
  const store = await openStore({ driver: 'postgres', url, poolSize: 1 }, (p) => p, {
    writer: 'inline',
    checkpoints: 'auto',
    schemaPolicy: 'migrate',
  }).catch((err: unknown) => {
    throw withoutSecrets(err, url);
  });
  await store.close();
}

async function connect(client: pg.Client, url: string): Promise<void> {
  try {
    await client.connect();
  } catch (err) {
    throw withoutSecrets(err, url);
  }
}

/** A driver's error with the URL's password scrubbed out of its message. */
function withoutSecrets(err: unknown, url: string): Error {
  if (!(err instanceof Error)) return new Error(`${safeUrl(url)}: ${String(err)}`);
  const message = scrubUrlSecrets(err.message, url);
  if (message === err.message) return err;
  const out = new Error(message, { cause: err });
  return Object.assign(out, { code: (err as { code?: unknown }).code });
}

/** Every table of the store but SQLite's own and the node registry, in an order that keeps related rows together. */
function sourceTables(db: Database.Database): string[] {
  const rows = db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )
    .all() as Array<{ name: string }>;
  return rows.map((r) => r.name).filter((n) => !NOT_COPIED.has(n));
}

async function copyTable(
  source: Database.Database,
  client: pg.Client,
  table: string,
  opts: CopyOptions,
): Promise<CopyTableResult> {
  const srcColumns = (source.prepare(`PRAGMA table_info("${table}")`).all() as Array<{ name: string }>).map(
    (c) => c.name,
  );
  const dest = await destinationColumns(client, table);
  if (dest.size === 0) {
    throw new StoreCopyError(
      'copy_destination_schema',
      `the PostgreSQL schema has no table ${table}: this hookgate's PostgreSQL driver does not match its SQLite schema (a bug: please report it)`,
    );
  }
  const missing = srcColumns.filter((c) => !dest.has(c));
  if (missing.length)
    throw new StoreCopyError(
      'copy_destination_schema',
      `the PostgreSQL table ${table} has no column ${missing.join(', ')} (a bug: please report it)`,
    );
  const key = await primaryKey(client, table);
  // Rows under a surrogate key (seq) are checked, when already present, to be the same record (same id or time).
  const identity =
    key.length === 1 && key[0] === 'seq' ? ['id', 'created_at', 'at'].find((c) => srcColumns.includes(c)) : undefined;

  const total = Number((source.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n);
  const result: CopyTableResult = { table, total, copied: 0, present: 0 };
  opts.onProgress?.(table, 0, total);
  const perBatch = Math.max(1, Math.min(opts.batchRows ?? MAX_BATCH_ROWS, Math.floor(MAX_PARAMS / srcColumns.length)));
  const order = key.length ? key.map((k) => `"${k}"`).join(', ') : 'rowid';
  let batch: Array<Record<string, unknown>> = [];
  const flush = async () => {
    const inserted = await insertBatch(client, table, srcColumns, key, identity, batch);
    result.copied += inserted;
    result.present += batch.length - inserted;
    opts.onProgress?.(table, result.copied + result.present, total);
    batch = [];
  };
  // Streamed in key order, one batch in memory at a time (nothing else runs on this connection meanwhile).
  const rows = source
    .prepare(`SELECT ${srcColumns.map((c) => `"${c}"`).join(', ')} FROM "${table}" ORDER BY ${order}`)
    .iterate() as IterableIterator<Record<string, unknown>>;
  for (const row of rows) {
    batch.push(row);
    if (batch.length >= perBatch) await flush();
  }
  if (batch.length) await flush();
  if (dest.get('seq')?.identity) await moveSequencePast(client, table);
  return result;
}

async function destinationColumns(
  client: pg.Client,
  table: string,
): Promise<Map<string, PgColumn & { identity: boolean }>> {
  const r = await client.query<{ column_name: string; data_type: string; is_identity: string }>(
    'SELECT column_name, data_type, is_identity FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1',
    [table],
  );
  return new Map(
    r.rows.map((c) => [c.column_name, { name: c.column_name, type: c.data_type, identity: c.is_identity === 'YES' }]),
  );
}

async function primaryKey(client: pg.Client, table: string): Promise<string[]> {
  const r = await client.query<{ attname: string }>(
    `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
     WHERE i.indrelid = to_regclass(quote_ident(current_schema()) || '.' || quote_ident($1)) AND i.indisprimary
     ORDER BY array_position(i.indkey, a.attnum)`,
    [table],
  );
  return r.rows.map((x) => x.attname);
}

/**
 * One transaction: insert what is missing, and check that what was already there under the same surrogate key is
 * the same record (else the destination holds work of its own, and copying into it would mix two stores).
 */
async function insertBatch(
  client: pg.Client,
  table: string,
  columns: string[],
  key: string[],
  identity: string | undefined,
  rows: Array<Record<string, unknown>>,
): Promise<number> {
  const params: unknown[] = [];
  const tuples = rows.map((row) => `(${columns.map((c) => `$${params.push(row[c] ?? null)}`).join(', ')})`);
  const cols = columns.map((c) => `"${c}"`).join(', ');
  const returning = key.length ? ` RETURNING ${key.map((k) => `"${k}"`).join(', ')}` : '';
  await client.query('BEGIN');
  try {
    const r = await client.query(
      `INSERT INTO "${table}" (${cols}) VALUES ${tuples.join(', ')} ON CONFLICT DO NOTHING${returning}`,
      params,
    );
    const inserted = r.rowCount ?? 0;
    if (identity && inserted < rows.length) {
      const done = new Set(r.rows.map((x: Record<string, unknown>) => String(x.seq)));
      const skipped = rows.filter((row) => !done.has(String(row.seq)));
      const there = await client.query(
        `SELECT seq, "${identity}" AS ident FROM "${table}" WHERE seq = ANY ($1::bigint[])`,
        [skipped.map((row) => row.seq)],
      );
      const held = new Map(there.rows.map((x: { seq: string; ident: unknown }) => [String(x.seq), String(x.ident)]));
      const other = skipped.find((row) => held.get(String(row.seq)) !== String(row[identity]));
      if (other) {
        throw new StoreCopyError(
          'copy_destination_conflict',
          `the destination's ${table} already holds a different record at seq ${String(other.seq)}: the database has work of its own (a hookgate ran on it). Copy into an empty database, or one that only holds an earlier copy of this store`,
        );
      }
    }
    await client.query('COMMIT');
    return inserted;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** The identity sequence of `seq` past the largest copied value: the next row PostgreSQL numbers gets max + 1. */
async function moveSequencePast(client: pg.Client, table: string): Promise<void> {
  await client.query('BEGIN');
  try {
    // No insert may take a number between reading the maximum and moving the sequence.
    await client.query(`LOCK TABLE "${table}" IN SHARE ROW EXCLUSIVE MODE`);
    await client.query(
      `SELECT setval(pg_get_serial_sequence($1, 'seq'), GREATEST((SELECT COALESCE(max(seq), 0) FROM "${table}") + 1, nextval(pg_get_serial_sequence($1, 'seq'))), false)`,
      [`"${table}"`],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}
