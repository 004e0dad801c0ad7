/**
 * Connections of the PostgreSQL driver: the client config every connection uses (pool, LISTEN client, checks), and
 * how a driver error becomes a `StoreError` without the URL's password.
 */
import pg from 'pg';
import { scrubUrlSecrets } from '../config/database-url.js';
import { StoreError } from '../errors.js';
import { safeUrl } from '../text-safe.js';

export interface PgConnectOptions {
  url: string;
  /**
   * The schema hookgate's tables live in (tests give each their own). Set as the connection's search_path; when
   * absent, the URL's own `options=-c search_path=…` (or the server's default, `public`) applies.
   */
  schema?: string;
  /** A request gets its 503 this soon when PostgreSQL does not answer (default 5000 ms). */
  connectionTimeoutMs?: number;
  /** Server-side bound of one statement (default 15000 ms): a stuck query becomes an error, not a hung request. */
  statementTimeoutMs?: number;
  /** Shown in pg_stat_activity (default `hookgate`). */
  applicationName?: string;
}

/** bigint (int8, OID 20) as a JS number: epoch ms, seqs and counts all fit in 2^53. Per connection, not global. */
const INT8_OID = 20;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export function pgClientConfig(o: PgConnectOptions): pg.ClientConfig {
  if (o.schema !== undefined && !SCHEMA_NAME.test(o.schema))
    throw new StoreError(`invalid PostgreSQL schema name "${o.schema}"`);
  return {
    connectionString: o.url,
    connectionTimeoutMillis: o.connectionTimeoutMs ?? 5000,
    statement_timeout: o.statementTimeoutMs ?? 15_000,
    // The lock wait of a claim or an upsert is bounded too (SKIP LOCKED never waits; the rest wait briefly).
    lock_timeout: o.statementTimeoutMs ?? 15_000,
    // And on the client's side: an answer that never comes (a connection that died without a word) fails the query
    // instead of holding its request, and every request queued behind its batch, until the socket gives up.
    query_timeout: (o.statementTimeoutMs ?? 15_000) + 5000,
    keepAlive: true,
    application_name: o.applicationName ?? 'hookgate',
    types,
    ...(o.schema !== undefined ? { options: `-c search_path=${o.schema}` } : {}),
  };
}

/** A driver error as a StoreError (503), its message scrubbed of the URL's password (config/database-url.ts). */
export function pgError(what: string, err: unknown, url: string): StoreError {
  if (err instanceof StoreError) return err;
  const message = scrubUrlSecrets(err instanceof Error ? err.message : String(err), url);
  return new StoreError(`PostgreSQL ${what} failed (${safeUrl(url)}): ${message}`, { cause: err });
}

/** SQLSTATE classes of a lost or refused connection (08), shutdown (57P), or too many clients (53300). */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return true; // a socket error (ECONNREFUSED, ECONNRESET, timeout): no SQLSTATE
  return code.startsWith('08') || code.startsWith('57P') || code === '53300';
}

/** SQLSTATE classes of a statement's own data: data exceptions (22) and integrity constraints (23). */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}
