/**
 * PostgreSQL driver: many `hookgate serve` processes on one database (CONTRACT §8).
 *
 * Client: `pg` (node-postgres), chosen by measurement of the accept path (one `SELECT hookgate_accept($1::jsonb, $2)`
 * per batch, PostgreSQL 15 on the same host, batches of accepts with a run and an idempotency key each, µs per
 * accept, one round trip per batch whatever its size):
 *   batch  1: pg 728 (named statement 583), postgres.js 706
 *   batch 16: pg 221 (named 214),           postgres.js 300
 *   batch 64: pg 213 (named 273),           postgres.js 300
 * The server's work dominates (the commit, the function's statements); the clients are level at batch 1 and pg is
 * ahead on larger batches, so pg stays (postgres.js did not clearly win).
 *
 * Modules: the accept path (group commit, one round trip per batch) postgres-accept.ts; the other writes
 * postgres-writes.ts; reads postgres-reads.ts (the admin listener's pages: postgres-pages.ts); notices postgres-notices.ts; schema and migrations
 * postgres-schema.ts, postgres-migrate.ts; connections postgres-connect.ts, postgres-db.ts.
 */
import { PgAcceptPath } from './postgres-accept.js';
import type { PgConnectOptions } from './postgres-connect.js';
import { PgAudit } from './postgres-audit.js';
import { PgGmail } from './postgres-gmail.js';
import { PgDb } from './postgres-db.js';
import { migrate, type PgSchemaOptions } from './postgres-migrate.js';
import { safeUrl } from '../text-safe.js';
import { feedNoticePayload, noticeChannel, PgListener } from './postgres-notices.js';
import { PgPages } from './postgres-pages.js';
import { PgReads } from './postgres-reads.js';
import { rowToNode } from './record-encoding.js';
import { PgWrites } from './postgres-writes.js';
import type { AcceptCommand, AcceptResult, ClusterNotice, NodeInfo, ReceivedHook, Store } from './types.js';

export { checkPostgres } from './postgres-migrate.js';

export interface PostgresStoreOptions extends PgConnectOptions, PgSchemaOptions {
  poolSize?: number;
  /** A degraded but working store (an idle connection dropped, notices reconnecting); the service logs it. */
  onWarning?: (message: string) => void;
  /** Told how long each group commit of the accept path took (metrics). */
  onCommit?: (ms: number, ops: number) => void;
}

/** The Store methods served as they are by the writes (postgres-writes.ts) and reads (postgres-reads.ts). */
const WRITE_METHODS = [
  'claimRuns', 'renewRunLeases', 'completeRun', 'releaseRuns', 'deferRun', 'failRun', 'addEvents', 'completeHeartbeat', 'setRoute',
  'claimDeliveries', 'releaseDeliveries', 'deliveryProgress', 'finishDelivery', 'retryDelivery', 'requeueRun', 'requeueFailedRuns', 'recordRefusals', 'prune',
] as const satisfies readonly (keyof PgWrites & keyof Store)[];
const READ_METHODS = [
  'getRun', 'listRuns', 'listSessions', 'getSession', 'listReceived', 'pendingEvents', 'sessionsWithPendingEvents', 'sessionMessages',
  'getRoute', 'listDeliveries', 'getDelivery',
] as const satisfies readonly (keyof PgReads & keyof Store)[];
const PAGE_METHODS = ['pageRuns', 'pageDeliveries', 'pageReceived', 'queueDepths', 'failuresSince', 'probeWrite'] as const satisfies readonly (keyof PgPages & keyof Store)[];
const GMAIL_METHODS = [
  'recordGmailPush', 'pendingGmailPushes', 'completeGmailFetch', 'recordGmailWatch', 'recordGmailError', 'readGmailStatus',
] as const satisfies readonly (keyof PgGmail & keyof Store)[];
const AUDIT_METHODS = ['appendAudit', 'pageAudit', 'pruneAudit'] as const satisfies readonly (keyof PgAudit & keyof Store)[];
// Declaration merging: the static block of PostgresStore installs these forwarders; `implements Store` checks them.
export interface PostgresStore
  extends Pick<PgWrites, (typeof WRITE_METHODS)[number]>,
    Pick<PgReads, (typeof READ_METHODS)[number]>,
    Pick<PgPages, (typeof PAGE_METHODS)[number]>,
    Pick<PgGmail, (typeof GMAIL_METHODS)[number]>,
    Pick<PgAudit, (typeof AUDIT_METHODS)[number]> {}

/**
 * Open the store, migrating its schema unless `schema` is "current": rejects with a StoreError when PostgreSQL is
 * unreachable, a StoreSchemaError when the schema is newer (or older, with "current").
 */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const db = new PgDb(opts, opts.onWarning);
  try {
    const schema = await db.withClient((client) => migrate(client, Date.now(), safeUrl(opts.url), opts));
    return new PostgresStore(db, opts, noticeChannel(schema));
  } catch (err) {
    await db.close();
    throw err;
  }
}

export class PostgresStore implements Store {
  static {
    const forward = (names: readonly string[], field: 'writes' | 'reads' | 'pages' | 'gmail' | 'audit') => {
      for (const name of names) {
        Object.defineProperty(PostgresStore.prototype, name, {
          value: function (this: PostgresStore, ...args: unknown[]) {
            const target = this[field] as unknown as Record<string, (...a: unknown[]) => unknown>;
            return target[name]!(...args);
          },
          writable: true,
          configurable: true,
        });
      }
    };
    forward(WRITE_METHODS, 'writes');
    forward(READ_METHODS, 'reads');
    forward(PAGE_METHODS, 'pages');
    forward(GMAIL_METHODS, 'gmail');
    forward(AUDIT_METHODS, 'audit');
  }

  readonly shared = true;
  private readonly acceptPath: PgAcceptPath;
  private readonly writes: PgWrites;
  private readonly reads: PgReads;
  private readonly pages: PgPages;
  private readonly gmail: PgGmail;
  private readonly audit: PgAudit;
  private readonly listener: PgListener;
  private closed = false;

  constructor(
    /** The pool (tests count its round trips: `db.queries`). */
    readonly db: PgDb,
    opts: PostgresStoreOptions,
    /** The LISTEN/NOTIFY channel of this store's schema. */
    readonly channel: string,
  ) {
    this.acceptPath = new PgAcceptPath(db, channel, opts.onCommit);
    this.writes = new PgWrites(db, channel);
    this.reads = new PgReads(db);
    this.pages = new PgPages(db);
    this.gmail = new PgGmail(db);
    this.audit = new PgAudit(db);
    this.listener = new PgListener(opts, channel, opts.onWarning);
  }

  accept(cmd: AcceptCommand): Promise<AcceptResult> {
    return this.acceptPath.accept(cmd);
  }

  recordReceived(rec: ReceivedHook): Promise<void> {
    return this.acceptPath.recordReceived(rec);
  }

  /** Nobody's leases are taken back on a shared store: expired ones are simply claimable (see claimRuns). */
  async recoverLeases(_now: number): Promise<number> {
    return 0;
  }

  // ——— cluster ———
  /** One row per session key: taken when free, expired, or already ours (a conditional upsert). */
  async leaseHeartbeat(sessionKey: string, owner: string, now: number, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `INSERT INTO heartbeat_leases (session_key, owner, until) VALUES ($1, $2, $3)
       ON CONFLICT (session_key) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
       WHERE heartbeat_leases.owner = EXCLUDED.owner OR heartbeat_leases.until <= $4`,
      [sessionKey, owner, now + leaseMs, now],
    );
    return (rowCount ?? 0) > 0;
  }

  async releaseHeartbeat(sessionKey: string, owner: string): Promise<void> {
    await this.db.query('DELETE FROM heartbeat_leases WHERE session_key = $1 AND owner = $2', [sessionKey, owner]);
  }

  /** The later `until` is kept; the notice goes out with the row (one statement: one transaction). */
  async shareLockout(bucket: string, until: number): Promise<void> {
    await this.db.query(
      `WITH up AS (
         INSERT INTO lockouts (bucket, until) VALUES ($1, $2)
         ON CONFLICT (bucket) DO UPDATE SET until = GREATEST(lockouts.until, EXCLUDED.until) RETURNING until)
       SELECT pg_notify($3, json_build_object('kind', 'lockout', 'bucket', $1::text, 'until', up.until)::text) FROM up`,
      [bucket, until, this.channel],
    );
  }

  /** Expired rows are dropped on the way (the table stays as small as the lockouts running). */
  async activeLockouts(now: number): Promise<{ bucket: string; until: number }[]> {
    await this.db.query('DELETE FROM lockouts WHERE until <= $1', [now]);
    const { rows } = await this.db.query<{ bucket: string; until: number }>('SELECT bucket, until FROM lockouts WHERE until > $1 ORDER BY bucket', [now]);
    return rows;
  }

  async registerNode(n: NodeInfo): Promise<void> {
    await this.db.query(
      `INSERT INTO nodes (id, host, pid, version, url, started_at, last_seen_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at, url = EXCLUDED.url, version = EXCLUDED.version`,
      [n.id, n.host, n.pid, n.version, n.url, n.startedAt, n.lastSeenAt],
    );
  }

  async removeNode(id: string): Promise<void> {
    await this.db.query('DELETE FROM nodes WHERE id = $1', [id]);
  }

  async listNodes(): Promise<NodeInfo[]> {
    const { rows } = await this.db.query('SELECT * FROM nodes ORDER BY last_seen_at DESC, id');
    return rows.map(rowToNode);
  }

  /** One NOTIFY carrying a batch of feed events (the caller keeps it under FEED_NOTICE_MAX_BYTES). */
  async publishFeed(node: string, events: readonly string[]): Promise<void> {
    if (events.length === 0) return;
    await this.db.query('SELECT pg_notify($1, $2)', [this.channel, feedNoticePayload(node, events)]);
  }

  subscribe(listener: (notice: ClusterNotice) => void): () => void {
    if (this.closed) return () => {};
    return this.listener.subscribe(listener);
  }

  /** Resolves once the LISTEN connection listens (tests: notify only after it does). */
  noticesReady(): Promise<void> {
    return this.listener.ready();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.acceptPath.close();
    await this.listener.close();
    await this.db.close();
  }
}
