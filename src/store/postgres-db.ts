/**
 * The PostgreSQL driver's pool: every statement goes through `query` or `tx`, which turn any failure into a
 * `StoreError` (→ 503) and count round trips (`queries`, read by the tests of group commit). Transactions run on
 * one pooled client; one that broke mid-way is destroyed, not returned to the pool.
 */
import pg from 'pg';
import { StoreError, StoreSchemaError } from '../errors.js';
import { isConnectionError, isDataError, pgClientConfig, pgError, type PgConnectOptions } from './postgres-connect.js';
import type { PgStatement } from './postgres-statements.js';
import type { WriteResult } from './group-commit.js';

/** A plain SQL string (parsed on every call), or a named statement of the catalogue (postgres-statements.ts). */
export type Sql = string | PgStatement;
export type Query = <R extends pg.QueryResultRow = Record<string, unknown>>(
  sql: Sql,
  params?: unknown[],
) => Promise<pg.QueryResult<R>>;

/** What node-postgres is given: a named statement is prepared once per connection, then only bound and executed. */
function toConfig(sql: Sql, params: unknown[] | undefined): pg.QueryConfig {
  return typeof sql === 'string'
    ? { text: sql, values: params ?? [] }
    : { name: sql.name, text: sql.text, values: params ?? [] };
}

/**
 * A prepared statement whose result columns changed under it (the schema was migrated since it was prepared):
 * SQLSTATE 0A000. Any other error of that class would fail unnamed as well, so the code alone is enough.
 */
function isStalePlan(err: unknown): boolean {
  return (err as { code?: unknown }).code === '0A000';
}

/**
 * Send a batch with `send` (one statement: one transaction); when it fails on one op's own data (a constraint, bad
 * data) it was rolled back whole, and each op is sent alone so that only the one at fault fails (as commitIsolated
 * does for SQLite). Anything else (unreachable, restarting, a timeout) fails the whole batch: N retries would only
 * wait N times.
 */
export async function sendIsolated<Op>(ops: Op[], send: (ops: Op[]) => Promise<unknown[]>): Promise<WriteResult[]> {
  try {
    return (await send(ops)).map((value) => ({ ok: true, value: value ?? undefined }));
  } catch (err) {
    if (ops.length === 1 || !isDataError((err as Error).cause ?? err)) throw err;
  }
  const results: WriteResult[] = [];
  for (const op of ops) {
    try {
      const [value] = await send([op]);
      results.push({ ok: true, value: value ?? undefined });
    } catch (err) {
      results.push({ ok: false, error: (err as Error).message });
    }
  }
  return results;
}

export class PgDb {
  readonly pool: pg.Pool;
  /** Statements sent (each one round trip; BEGIN and COMMIT count too). */
  queries = 0;
  /** The server processes of this pool's connections: a notice one of them sent is this node's own (postgres-notices.ts). */
  readonly backends = new Set<number>();
  private closed = false;

  constructor(
    private readonly opts: PgConnectOptions & { poolSize?: number },
    onError: (message: string) => void = () => {},
  ) {
    this.pool = new pg.Pool({ ...pgClientConfig(opts), max: opts.poolSize ?? 10, idleTimeoutMillis: 30_000 });
    // An idle client whose connection dropped (server restart): the pool discards it; never an unhandled 'error'.
    this.pool.on('error', (err) => onError(pgError('idle connection', err, opts.url).message));
    // And every pooled connection keeps a listener of its own for as long as it lives: a restart's "terminating
    // connection due to administrator command" reached a connection between pg-pool's listeners and ours and crashed
    // a node (an unhandled 'error' event: on CI, and in 1 of 4 runs here under load; in none of 6 since). The pool's
    // and our listeners still see every error.
    this.pool.on('connect', (client) => {
      client.on('error', () => {});
      const pid = (client as pg.PoolClient & { processID: number | null }).processID;
      if (pid !== null) this.backends.add(pid);
    });
    this.pool.on('remove', (client) =>
      this.backends.delete((client as pg.PoolClient & { processID: number | null }).processID ?? -1),
    );
  }

  readonly query: Query = async (sql, params) => {
    if (this.closed) throw new StoreError('the store is closed');
    this.queries++;
    try {
      return typeof sql === 'string' ? await this.pool.query(toConfig(sql, params)) : await this.named(sql, params);
    } catch (err) {
      throw pgError('query', err, this.opts.url);
    }
  };

  /**
   * A named statement on a pooled connection. A connection that prepared it before another node migrated the schema
   * (a column added: "cached plan must not change result type") would refuse it for as long as it lives: that
   * connection is closed, and the statement sent once more unnamed on another.
   */
  private async named<R extends pg.QueryResultRow>(
    sql: PgStatement,
    params: unknown[] | undefined,
  ): Promise<pg.QueryResult<R>> {
    const client = await this.pool.connect();
    let failed: Error | undefined;
    try {
      return await client.query<R>(toConfig(sql, params));
    } catch (err) {
      failed = err as Error;
      if (!isStalePlan(err)) throw err;
    } finally {
      // As pool.query does: a connection whose statement failed is not reused.
      client.release(failed);
    }
    return this.pool.query<R>(toConfig(sql.text, params));
  }

  /** Run `fn` in one transaction (BEGIN … COMMIT); rolled back if it throws. */
  async tx<T>(fn: (q: Query) => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreError('the store is closed');
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw pgError('connection', err, this.opts.url);
    }
    const q: Query = async (sql, params) => {
      this.queries++;
      return client.query(toConfig(sql, params));
    };
    let broken: unknown;
    // A connection dropping between two statements is emitted on the checked-out client: noted, never unhandled.
    const onError = (err: Error) => (broken = err);
    client.on('error', onError);
    try {
      await q('BEGIN');
      const value = await fn(q);
      await q('COMMIT');
      return value;
    } catch (err) {
      if (isConnectionError(err) || isStalePlan(err)) broken = err;
      else await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
      throw pgError('transaction', err, this.opts.url);
    } finally {
      client.off('error', onError);
      client.release(broken instanceof Error ? broken : broken ? new Error('connection lost') : undefined);
    }
  }

  /** One client for a sequence of statements of our own (migrations), released after. */
  async withClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw pgError('connection', err, this.opts.url);
    }
    let broken: Error | undefined;
    const onError = (err: Error) => (broken = err);
    client.on('error', onError);
    try {
      return await fn(client);
    } catch (err) {
      // A refused schema is not a failed statement: it keeps its own code and message (schema-version.ts).
      if (err instanceof StoreSchemaError) throw err;
      throw pgError('statement', err, this.opts.url);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end().catch(() => {});
  }
}
