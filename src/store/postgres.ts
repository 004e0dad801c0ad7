/**
 * PostgreSQL driver: many `hookgate serve` processes on one database (docs/scale-out.md).
 *
 * Client: `pg` (node-postgres), chosen by measuring the accept path (one `SELECT hookgate_accept($1::jsonb, $2)`
 * per batch) against postgres.js: the server's work dominates (the commit, the function's statements); the clients
 * are level on single accepts and pg is ahead on larger batches (docs/performance.md, "Why the code is as it is").
 *
 * Modules: the accept path (group commit, one round trip per batch) postgres-accept.ts, its function
 * postgres-accept-function.ts; the runtime's group-committed writes (completions, delivery outcomes)
 * postgres-completions.ts; the other writes postgres-writes.ts; the named hot statements postgres-statements.ts;
 * reads postgres-reads.ts (the admin listener's
 * pages: postgres-pages.ts); notices postgres-notices.ts; schema and migrations postgres-schema.ts,
 * postgres-migrate.ts (the resulting tables: docs/schema.md); connections postgres-connect.ts, postgres-db.ts.
 */
import { PgAcceptPath } from './postgres-accept.js';
import type { StoredBreakdown } from './breakdown.js';
import type { PgConnectOptions } from './postgres-connect.js';
import { PgAudit } from './postgres-audit.js';
import { pgPruneExpired, pgPruneFinished } from './postgres-retention.js';
import type { ExpiredPruned, FinishedWorkPolicy, FinishedWorkPruned } from './retention.js';
import { PgGmail } from './postgres-gmail.js';
import { PgDb } from './postgres-db.js';
import { migrate, type PgSchemaOptions } from './postgres-migrate.js';
import { safeUrl } from '../text-safe.js';
import { feedNoticePayload, noticeChannel, PgListener } from './postgres-notices.js';
import { PgPages } from './postgres-pages.js';
import { PgReads } from './postgres-reads.js';
import { PgRouteCache } from './postgres-route-cache.js';
import { PG } from './postgres-statements.js';
import { rowToNode } from './record-encoding.js';
import { PgWrites } from './postgres-writes.js';
import type { AuditEntry, AuditPageQuery } from './audit-types.js';
import type { GmailFetchCompletion } from './gmail-types.js';
import type {
  DeliveryPageQuery,
  Page,
  QueueDepths,
  ReceivedPageQuery,
  ReceivedRecord,
  RecentFailures,
  RunPageQuery,
} from './pages.js';
import type {
  AcceptCommand,
  AcceptResult,
  ClusterNotice,
  Delivery,
  DeliveryOutcome,
  DeliveryState,
  GmailPush,
  GmailStatus,
  HeartbeatCompletion,
  ListRunsQuery,
  NewSystemEvent,
  NodeInfo,
  ReceivedHook,
  RefusalWindow,
  Run,
  RunOutcome,
  SessionDetail,
  SessionMessage,
  SessionRoute,
  SessionSummary,
  Store,
  SystemEvent,
} from './types.js';

export { checkPostgres } from './postgres-migrate.js';

export interface PostgresStoreOptions extends PgConnectOptions, PgSchemaOptions {
  poolSize?: number;
  /** A degraded but working store (an idle connection dropped, notices reconnecting); the service logs it. */
  onWarning?: (message: string) => void;
  /** Told how long each group commit of the accept path took (metrics). */
  onCommit?: (ms: number, ops: number) => void;
}

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
  readonly shared = true;
  readonly claimRoundTrip = true;
  private readonly acceptPath: PgAcceptPath;
  private readonly writes: PgWrites;
  private readonly reads: PgReads;
  private readonly pages: PgPages;
  private readonly gmail: PgGmail;
  private readonly audit: PgAudit;
  private readonly listener: PgListener;
  private readonly routes = new PgRouteCache();
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
    this.listener = new PgListener(opts, channel, opts.onWarning, (pid) => db.backends.has(pid), {
      listening: (on) => this.routes.setListening(on),
      route: (key) => this.routes.forget(key),
    });
  }

  accept(cmd: AcceptCommand): Promise<AcceptResult> {
    return this.acceptPath.accept(cmd);
  }

  recordReceived(rec: ReceivedHook): Promise<void> {
    return this.acceptPath.recordReceived(rec);
  }

  // ——— the writes (postgres-writes.ts) ———
  claimRuns(owner: string, now: number, leaseMs: number, limit: number): Promise<Run[]> {
    return this.writes.claimRuns(owner, now, leaseMs, limit);
  }
  renewRunLeases(owner: string, ids: string[], until: number): Promise<void> {
    return this.writes.renewRunLeases(owner, ids, until);
  }
  completeRun(c: RunOutcome): Promise<boolean> {
    return this.writes.completeRun(c);
  }
  releaseRuns(owner: string, ids: string[], now: number, note: string): Promise<void> {
    return this.writes.releaseRuns(owner, ids, now, note);
  }
  deferRun(d: { runId: string; owner: string; until: number; error: string; now: number }): Promise<boolean> {
    return this.writes.deferRun(d);
  }
  failRun(id: string, error: string, now: number): Promise<void> {
    return this.writes.failRun(id, error, now);
  }
  addEvents(events: NewSystemEvent[]): Promise<void> {
    return this.writes.addEvents(events);
  }
  completeHeartbeat(c: HeartbeatCompletion): Promise<void> {
    return this.writes.completeHeartbeat(c);
  }
  setRoute(
    sessionKey: string,
    agentId: string,
    channel: string,
    to: string,
    now: number,
    accountId?: string | null,
  ): Promise<void> {
    // Forgotten here too, not only when this node's own notice comes back: a read right after sees the new route.
    return this.writes
      .setRoute(sessionKey, agentId, channel, to, now, accountId)
      .finally(() => this.routes.forget(sessionKey));
  }
  claimDeliveries(owner: string, now: number, leaseMs: number, limit: number, followers?: number): Promise<Delivery[]> {
    return this.writes.claimDeliveries(owner, now, leaseMs, limit, followers);
  }
  releaseDeliveries(owner: string, ids: string[], now: number): Promise<void> {
    return this.writes.releaseDeliveries(owner, ids, now);
  }
  deliveryProgress(id: string, owner: string, chunksSent: number, now: number): Promise<void> {
    return this.writes.deliveryProgress(id, owner, chunksSent, now);
  }
  finishDelivery(id: string, owner: string, outcome: DeliveryOutcome, now: number): Promise<void> {
    return this.writes.finishDelivery(id, owner, outcome, now);
  }
  retryDelivery(id: string, now: number): Promise<Delivery | undefined> {
    return this.writes.retryDelivery(id, now);
  }
  requeueRun(id: string, now: number): Promise<Run | undefined> {
    return this.writes.requeueRun(id, now);
  }
  requeueFailedRuns(since: number, now: number): Promise<string[]> {
    return this.writes.requeueFailedRuns(since, now);
  }
  recordRefusals(window: RefusalWindow, keepWindows: number): Promise<void> {
    return this.writes.recordRefusals(window, keepWindows);
  }
  // ——— reads (postgres-reads.ts) ———
  getRun(id: string): Promise<Run | undefined> {
    return this.reads.getRun(id);
  }
  listRuns(q?: ListRunsQuery): Promise<Run[]> {
    return this.reads.listRuns(q);
  }
  listSessions(limit?: number): Promise<SessionSummary[]> {
    return this.reads.listSessions(limit);
  }
  getSession(key: string): Promise<SessionDetail | undefined> {
    return this.reads.getSession(key);
  }
  listReceived(limit?: number, filter?: { rejected?: boolean }): Promise<ReceivedHook[]> {
    return this.reads.listReceived(limit, filter);
  }
  pendingEvents(sessionKey: string, limit?: number): Promise<SystemEvent[]> {
    return this.reads.pendingEvents(sessionKey, limit);
  }
  sessionsWithPendingEvents(limit?: number): Promise<string[]> {
    return this.reads.sessionsWithPendingEvents(limit);
  }
  sessionMessages(agentId: string, sessionKey: string, limit: number): Promise<SessionMessage[]> {
    return this.reads.sessionMessages(agentId, sessionKey, limit);
  }
  /** Kept while this node listens for notices (postgres-route-cache.ts). */
  getRoute(sessionKey: string): Promise<SessionRoute | undefined> {
    return this.routes.get(sessionKey, (key) => this.reads.getRoute(key));
  }
  listDeliveries(q?: { state?: DeliveryState; runId?: string; limit?: number }): Promise<Delivery[]> {
    return this.reads.listDeliveries(q);
  }
  getDelivery(id: string): Promise<Delivery | undefined> {
    return this.reads.getDelivery(id);
  }
  // ——— the admin listener's pages and write probe (postgres-pages.ts) ———
  pageRuns(q: RunPageQuery): Promise<Page<Run>> {
    return this.pages.pageRuns(q);
  }
  pageDeliveries(q: DeliveryPageQuery): Promise<Page<Delivery>> {
    return this.pages.pageDeliveries(q);
  }
  pageReceived(q: ReceivedPageQuery): Promise<Page<ReceivedRecord>> {
    return this.pages.pageReceived(q);
  }
  queueDepths(): Promise<QueueDepths> {
    return this.pages.queueDepths();
  }
  failuresSince(since: number): Promise<RecentFailures> {
    return this.pages.failuresSince(since);
  }
  breakdownSince(since: number, until: number, bucketMs: number): Promise<StoredBreakdown> {
    return this.pages.breakdownSince(since, until, bucketMs);
  }
  refusalsStoredUntil(): Promise<number | null> {
    return this.pages.refusalsStoredUntil();
  }
  probeWrite(now: number): Promise<void> {
    return this.pages.probeWrite(now);
  }
  // ——— Gmail (postgres-gmail.ts) ———
  recordGmailPush(push: GmailPush): Promise<{ duplicate: boolean }> {
    return this.gmail.recordGmailPush(push);
  }
  pendingGmailPushes(account?: string, limit?: number): Promise<GmailPush[]> {
    return this.gmail.pendingGmailPushes(account, limit);
  }
  completeGmailFetch(c: GmailFetchCompletion): Promise<void> {
    return this.gmail.completeGmailFetch(c);
  }
  recordGmailWatch(w: { account: string; expiration: number; historyId: string; now: number }): Promise<void> {
    return this.gmail.recordGmailWatch(w);
  }
  recordGmailError(account: string, error: string | null, now: number): Promise<void> {
    return this.gmail.recordGmailError(account, error, now);
  }
  readGmailStatus(account: string): Promise<GmailStatus | undefined> {
    return this.gmail.readGmailStatus(account);
  }
  // ——— the audit trail (postgres-audit.ts) ———
  appendAudit(entries: AuditEntry[]): Promise<void> {
    return this.audit.appendAudit(entries);
  }
  pageAudit(q: AuditPageQuery): Promise<Page<AuditEntry>> {
    return this.audit.pageAudit(q);
  }
  pruneAudit(before: number): Promise<number> {
    return this.audit.pruneAudit(before);
  }
  // ——— retention (postgres-retention.ts) ———
  pruneFinished(before: number, policy: FinishedWorkPolicy): Promise<FinishedWorkPruned> {
    return pgPruneFinished(this.db, before, policy);
  }
  prune(now: number, receivedBefore: number, signal?: AbortSignal): Promise<ExpiredPruned> {
    return pgPruneExpired(this.db, now, receivedBefore, signal);
  }

  /** Nobody's leases are taken back on a shared store: expired ones are simply claimable (see claimRuns). */
  async recoverLeases(_now: number): Promise<number> {
    return 0;
  }

  // ——— cluster ———
  /** One row per session key: taken when free, expired, or already ours (a conditional upsert). */
  async leaseHeartbeat(sessionKey: string, owner: string, now: number, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query(PG.leaseHeartbeat, [sessionKey, owner, now + leaseMs, now]);
    return (rowCount ?? 0) > 0;
  }

  async releaseHeartbeat(sessionKey: string, owner: string): Promise<void> {
    await this.db.query(PG.releaseHeartbeat, [sessionKey, owner]);
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
    const { rows } = await this.db.query<{ bucket: string; until: number }>(
      'SELECT bucket, until FROM lockouts WHERE until > $1 ORDER BY bucket',
      [now],
    );
    return rows;
  }

  async registerNode(n: NodeInfo): Promise<void> {
    await this.db.query(PG.registerNode, [n.id, n.host, n.pid, n.version, n.url, n.startedAt, n.lastSeenAt]);
  }

  async removeNode(id: string): Promise<void> {
    await this.db.query('DELETE FROM nodes WHERE id = $1', [id]);
  }

  async listNodes(): Promise<NodeInfo[]> {
    const { rows } = await this.db.query('SELECT * FROM nodes ORDER BY last_seen_at DESC, id');
    return rows.map(rowToNode);
  }

  /** One NOTIFY carrying a batch of feed events (the caller keeps it under FEED_NOTICE_MAX_BYTES). */
  async publishFeed(node: string, events: readonly string[], watchMs?: number): Promise<void> {
    if (events.length === 0 && watchMs === undefined) return;
    await this.db.query(PG.notify, [this.channel, feedNoticePayload(node, events, watchMs)]);
  }

  outboxSpare(spare: () => number): void {
    this.writes.outboxSpare(spare);
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
    await this.writes.close();
    await this.listener.close();
    await this.db.close();
  }
}
