import type { StoredBreakdown } from './breakdown.js';
import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { StoreError, StoreSchemaError } from '../errors.js';
import type { AuditEntry, AuditPageQuery } from './audit-types.js';
import type { GmailFetchCompletion } from './gmail-types.js';
import { GroupCommit, type WriteResult } from './group-commit.js';
import { openSqlite } from './sqlite-open.js';
import type { WriteOp } from './sqlite-write-ops.js';
import { SqliteWriter } from './sqlite-writer.js';
import { pruneExpiredSqlite, pruneFinishedSqlite } from './sqlite-retention.js';
import { SqlitePages } from './sqlite-pages.js';
import { type AdminReads, SqliteReadThread } from './sqlite-read-thread.js';
import { SqliteReads } from './sqlite-reads.js';
import type {
  DeliveryPageQuery,
  Page,
  QueueDepths,
  ReceivedPageQuery,
  ReceivedRecord,
  RecentFailures,
  RunPageQuery,
} from './pages.js';
import { CHECKPOINT_INTERVAL_MS, Checkpointer } from './sqlite-checkpointer.js';
import { assertWritableStore, exposedStoreWarning, ShmGuard, StoreFileIdentity } from './sqlite-files.js';
import type { SchemaPolicy } from './schema-version.js';
import { startWorker } from './start-worker.js';
import { LocalCluster } from './local-cluster.js';
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

export interface SqliteStoreOptions {
  path: string;
  /** "normal": survives process crashes (WAL); "full": fsync on every commit, survives power loss. */
  synchronous?: 'normal' | 'full';
  /** Where writes run: "thread" (default) on a writer thread; "inline" on the caller's thread. */
  writer?: 'thread' | 'inline';
  /** How long a write waits for a lock held by another process before it fails (→ 503). */
  busyTimeoutMs?: number;
  /** "migrate" (default): bring an older schema up to date; "current": refuse it (schema-version.ts). */
  schemaPolicy?: SchemaPolicy;
  /** Told the schema version found at open and the one the store has now (see sqlite-open.ts). */
  onSchema?: (from: number, to: number) => void;
  /**
   * Inline writer only: "thread" runs WAL checkpoints on a thread of their own, so their fsyncs never block the event
   * loop; "auto" (default, storage.checkpoints) leaves them to SQLite, on the committing connection.
   */
  checkpoints?: 'thread' | 'auto';
  /** Told about a degraded but working store (the checkpoint thread stopped); the service logs it. */
  onWarning?: (message: string) => void;
  /** Told once when the store stops accepting writes for good (its file was deleted); the service logs it as an error. */
  onError?: (message: string) => void;
  /** Told how long each group commit took (metrics). */
  onCommit?: (ms: number, ops: number) => void;
  /** Whether the ingress is saturated (the service's IngressPressure): the runtime's writes then chain less (group-commit.ts). */
  ingressBusy?: () => boolean;
  /** The admin reads (pages.ts): "thread" (the service) on a read thread of their own; "inline" (default) here. */
  adminReads?: 'thread' | 'inline';
}

/** The writer thread's young generation: 2×4 MiB semi-spaces (V8 adds a third), as `npm start` gave it (start-worker.ts). */
const WRITER_THREAD_LIMITS = { maxYoungGenerationSizeMb: 12 };

/**
 * SQLite driver. Reads run on the caller's connection (sqlite-reads.ts), the admin's on a read thread in the service
 * (sqlite-read-thread.ts, sqlite-pages.ts); writes are committed in batches by one writer, inline or on a writer thread
 * (group commit: see group-commit.ts). Each write method below sends its op to the writer; the op's handler is in
 * sqlite-write-ops.ts (the accept: sqlite-accept.ts), its SQL in sqlite-statements.ts.
 */
export class SqliteStore implements Store {
  readonly db: Database.Database;
  private readonly reads: SqliteReads;
  private readonly pages: AdminReads;
  private readonly readThread: SqliteReadThread | undefined;
  private readonly writes: GroupCommit<WriteOp>;
  private closed = false;
  private readonly worker: Worker | undefined;
  private readonly inlineWriter: SqliteWriter | undefined;
  private checkpointer: Checkpointer | undefined;
  private readonly onWarning: ((message: string) => void) | undefined;
  private readonly onError: ((message: string) => void) | undefined;
  private readonly identity: StoreFileIdentity | undefined;
  private readonly shm: ShmGuard | undefined;
  private workerWaiters: Array<{ resolve: (results: WriteResult[]) => void; reject: (e: StoreError) => void }> = [];

  constructor(opts: SqliteStoreOptions) {
    this.writes = new GroupCommit((ops) => this.commit(ops), opts.onCommit, opts.ingressBusy);
    const synchronous = opts.synchronous ?? 'normal';
    // Looked at before opening creates anything: only what a user (or an older version) left open is reported.
    const exposed = exposedStoreWarning(opts.path);
    if (opts.path !== ':memory:') assertWritableStore(opts.path);
    try {
      this.db = openSqlite(opts.path, synchronous, opts.busyTimeoutMs, {
        schemaPolicy: opts.schemaPolicy,
        onSchema: opts.onSchema,
      });
    } catch (err) {
      if (err instanceof StoreSchemaError) throw err;
      throw new StoreError(`cannot open SQLite store at ${opts.path}: ${(err as Error).message}`, { cause: err });
    }
    this.reads = new SqliteReads(this.db);
    if (opts.adminReads === 'thread' && opts.path !== ':memory:')
      this.readThread = new SqliteReadThread({ path: opts.path, busyTimeoutMs: opts.busyTimeoutMs ?? 5000 });
    this.pages = this.readThread ?? new SqlitePages(this.db);
    this.identity = opts.path === ':memory:' ? undefined : new StoreFileIdentity(opts.path);
    this.onWarning = opts.onWarning;
    this.onError = opts.onError;
    this.shm =
      opts.path === ':memory:'
        ? undefined
        : new ShmGuard(`${opts.path}-shm`, (refused) =>
            refused
              ? this.onError?.(
                  `${refused.message} Every read and write is refused (503) until it can be written again.`,
                )
              : this.onWarning?.(`the store's -shm file can be written again: reads and writes go on`),
          );
    if (exposed) this.onWarning?.(exposed);
    if ((opts.writer ?? 'thread') === 'inline' || opts.path === ':memory:') {
      this.inlineWriter = new SqliteWriter(this.db);
      if (opts.checkpoints === 'thread' && opts.path !== ':memory:') {
        const data = {
          path: opts.path,
          synchronous,
          busyTimeoutMs: opts.busyTimeoutMs ?? 5000,
          intervalMs: CHECKPOINT_INTERVAL_MS,
        };
        this.checkpointer = new Checkpointer(this.db, data, () => this.closed, this.onWarning);
      }
      return;
    }
    this.worker = startWorker(
      './sqlite-worker',
      import.meta.url,
      { path: opts.path, synchronous, busyTimeoutMs: opts.busyTimeoutMs ?? 5000 },
      WRITER_THREAD_LIMITS,
    );
    this.worker.unref();
    this.worker.on('message', (msg: { results?: WriteResult[] }) => {
      if (msg.results) this.workerWaiters.shift()?.resolve(msg.results);
    });
    this.worker.on('error', (err) => this.fail(new StoreError(`SQLite writer failed: ${err.message}`, { cause: err })));
    this.worker.on('exit', (code) => {
      if (!this.closed) this.fail(new StoreError(`SQLite writer exited (code ${code})`));
    });
  }

  /** One batch: on this thread, answered at once; on the writer thread, once it answers. Throws what it refuses. */
  private commit(ops: WriteOp[]): WriteResult[] | Promise<WriteResult[]> {
    const broken = this.writes.failure;
    if (broken) throw broken;
    const hold = this.checkpointer?.bound.hold;
    if (hold) return hold.then(() => this.commit(ops));
    const refused = this.shm?.refused();
    if (refused) throw refused;
    if (this.inlineWriter) return this.committed(this.inlineWriter.runBatch(ops));
    return new Promise<WriteResult[]>((resolve, reject) => {
      this.workerWaiters.push({ resolve, reject });
      this.worker!.postMessage({ batch: ops });
    }).then((results) => this.committed(results));
  }

  /**
   * A batch is answered only if the database is still the file at its path after it committed: once it was
   * deleted, moved or replaced, this batch and every later write fail (503). The check runs at most once a
   * millisecond (StoreFileIdentity), so at most the batches of the millisecond after the last check can be answered
   * 200 after the file went away (under full load one or two); nothing checked after that is.
   */
  private committed(results: WriteResult[]): WriteResult[] {
    const lost = this.identity?.lost();
    if (lost) {
      const err = new StoreError(
        `the SQLite store ${this.db.name} ${lost} while hookgate was running: every write is refused from now on (503), as what it accepted would not be there after a restart; put the file back or restart on a new store`,
      );
      if (!this.writes.failure) this.onError?.(err.message);
      this.fail(err);
      throw err;
    }
    this.checkpointer?.bound.afterCommit();
    return results;
  }

  /** The writer thread is gone: fail the batches it had, and every write from now on. */
  private fail(err: StoreError): void {
    const waiters = this.workerWaiters;
    this.workerWaiters = [];
    for (const w of waiters) w.reject(err);
    this.writes.fail(err);
  }

  // One process holds a SQLite store: the cluster seams are in memory (local-cluster.ts), the registry a table.
  private readonly cluster = new LocalCluster();
  readonly shared = false;
  readonly claimRoundTrip = false;
  leaseHeartbeat(sessionKey: string, owner: string, now: number, leaseMs: number): Promise<boolean> {
    return this.cluster.leaseHeartbeat(sessionKey, owner, now, leaseMs);
  }
  releaseHeartbeat(sessionKey: string, owner: string): Promise<void> {
    return this.cluster.releaseHeartbeat(sessionKey, owner);
  }
  shareLockout(bucket: string, until: number): Promise<void> {
    return this.cluster.shareLockout(bucket, until);
  }
  activeLockouts(now: number): Promise<{ bucket: string; until: number }[]> {
    return this.cluster.activeLockouts(now);
  }
  subscribe(listener: (notice: ClusterNotice) => void): () => void {
    return this.cluster.subscribe(listener);
  }
  publishFeed(node: string, events: readonly string[]): Promise<void> {
    return this.cluster.publishFeed(node, events);
  }

  // ——— reads (sqlite-reads.ts; the admin's: sqlite-pages.ts, maybe on the read thread): each probes the -shm first ———
  listNodes(): Promise<NodeInfo[]> {
    return this.refusedRead() ?? this.reads.listNodes();
  }
  pageRuns(q: RunPageQuery): Promise<Page<Run>> {
    return this.refusedRead() ?? this.pages.pageRuns(q);
  }
  pageDeliveries(q: DeliveryPageQuery): Promise<Page<Delivery>> {
    return this.refusedRead() ?? this.pages.pageDeliveries(q);
  }
  pageReceived(q: ReceivedPageQuery): Promise<Page<ReceivedRecord>> {
    return this.refusedRead() ?? this.pages.pageReceived(q);
  }
  queueDepths(): Promise<QueueDepths> {
    return this.refusedRead() ?? this.pages.queueDepths();
  }
  failuresSince(since: number): Promise<RecentFailures> {
    return this.refusedRead() ?? this.pages.failuresSince(since);
  }
  breakdownSince(since: number, until: number, bucketMs: number): Promise<StoredBreakdown> {
    return this.refusedRead() ?? this.pages.breakdownSince(since, until, bucketMs);
  }
  refusalsStoredUntil(): Promise<number | null> {
    return this.refusedRead() ?? this.pages.refusalsStoredUntil();
  }
  getRun(id: string): Promise<Run | undefined> {
    return this.refusedRead() ?? this.reads.getRun(id);
  }
  listRuns(q?: ListRunsQuery): Promise<Run[]> {
    return this.refusedRead() ?? this.reads.listRuns(q);
  }
  listSessions(limit?: number): Promise<SessionSummary[]> {
    return this.refusedRead() ?? this.reads.listSessions(limit);
  }
  getSession(key: string): Promise<SessionDetail | undefined> {
    return this.refusedRead() ?? this.reads.getSession(key);
  }
  listReceived(limit?: number, filter?: { rejected?: boolean }): Promise<ReceivedHook[]> {
    return this.refusedRead() ?? this.reads.listReceived(limit, filter);
  }
  pendingEvents(sessionKey: string, limit?: number): Promise<SystemEvent[]> {
    return this.refusedRead() ?? this.reads.pendingEvents(sessionKey, limit);
  }
  sessionsWithPendingEvents(limit?: number): Promise<string[]> {
    return this.refusedRead() ?? this.reads.sessionsWithPendingEvents(limit);
  }
  sessionMessages(agentId: string, sessionKey: string, limit: number): Promise<SessionMessage[]> {
    return this.refusedRead() ?? this.reads.sessionMessages(agentId, sessionKey, limit);
  }
  getRoute(sessionKey: string): Promise<SessionRoute | undefined> {
    return this.refusedRead() ?? this.reads.getRoute(sessionKey);
  }
  listDeliveries(q?: { state?: DeliveryState; runId?: string; limit?: number }): Promise<Delivery[]> {
    return this.refusedRead() ?? this.reads.listDeliveries(q);
  }
  getDelivery(id: string): Promise<Delivery | undefined> {
    return this.refusedRead() ?? this.reads.getDelivery(id);
  }
  readGmailStatus(account: string): Promise<GmailStatus | undefined> {
    return this.refusedRead() ?? this.reads.readGmailStatus(account);
  }
  pendingGmailPushes(account?: string, limit?: number): Promise<GmailPush[]> {
    return this.refusedRead() ?? this.reads.pendingGmailPushes(account, limit);
  }
  pageAudit(q: AuditPageQuery): Promise<Page<AuditEntry>> {
    return this.refusedRead() ?? this.reads.pageAudit(q);
  }

  /** A rejection while the -shm cannot be written (ShmGuard); undefined while reads may go on. */
  private refusedRead(): Promise<never> | undefined {
    const refused = this.shm?.refused();
    return refused ? Promise.reject(refused) : undefined;
  }

  // ——— writes: the ingress (accept: sqlite-accept.ts) ———
  accept(cmd: AcceptCommand): Promise<AcceptResult> {
    return this.writes.write({ op: 'accept', args: [cmd] }) as Promise<AcceptResult>;
  }
  recordReceived(rec: ReceivedHook): Promise<void> {
    return this.writes.write({ op: 'recordReceived', args: [rec] }) as Promise<void>;
  }
  recordRefusals(window: RefusalWindow, keepWindows: number): Promise<void> {
    return this.writes.write({ op: 'recordRefusals', args: [window, keepWindows] }) as Promise<void>;
  }
  // ——— writes: the runtime: runs ———
  claimRuns(owner: string, now: number, leaseMs: number, limit: number): Promise<Run[]> {
    return this.writes.write({ op: 'claimRuns', args: [owner, now, leaseMs, limit] }) as Promise<Run[]>;
  }
  renewRunLeases(owner: string, ids: string[], until: number): Promise<void> {
    return this.writes.write({ op: 'renewRunLeases', args: [owner, ids, until] }) as Promise<void>;
  }
  completeRun(c: RunOutcome): Promise<boolean> {
    return this.writes.write({ op: 'completeRun', args: [c] }) as Promise<boolean>;
  }
  deferRun(d: { runId: string; owner: string; until: number; error: string; now: number }): Promise<boolean> {
    return this.writes.write({ op: 'deferRun', args: [d] }) as Promise<boolean>;
  }
  releaseRuns(owner: string, ids: string[], now: number, note: string): Promise<void> {
    return this.writes.write({ op: 'releaseRuns', args: [owner, ids, now, note] }) as Promise<void>;
  }
  failRun(id: string, error: string, now: number): Promise<void> {
    return this.writes.write({ op: 'failRun', args: [id, error, now] }) as Promise<void>;
  }
  // ——— writes: the runtime: events, heartbeats, routes ———
  addEvents(events: NewSystemEvent[]): Promise<void> {
    return this.writes.write({ op: 'addEvents', args: [events] }) as Promise<void>;
  }
  completeHeartbeat(c: HeartbeatCompletion): Promise<void> {
    return this.writes.write({ op: 'completeHeartbeat', args: [c] }) as Promise<void>;
  }
  setRoute(
    sessionKey: string,
    agentId: string,
    channel: string,
    to: string,
    now: number,
    accountId?: string | null,
  ): Promise<void> {
    return this.writes.write({
      op: 'setRoute',
      args: [sessionKey, agentId, channel, to, now, accountId],
    }) as Promise<void>;
  }
  // ——— writes: the runtime: deliveries (the outbox) ———
  claimDeliveries(owner: string, now: number, leaseMs: number, limit: number, followers?: number): Promise<Delivery[]> {
    return this.writes.write({ op: 'claimDeliveries', args: [owner, now, leaseMs, limit, followers] }) as Promise<
      Delivery[]
    >;
  }
  releaseDeliveries(owner: string, ids: string[], now: number): Promise<void> {
    return this.writes.write({ op: 'releaseDeliveries', args: [owner, ids, now] }) as Promise<void>;
  }
  deliveryProgress(id: string, owner: string, chunksSent: number, now: number): Promise<void> {
    return this.writes.write({ op: 'deliveryProgress', args: [id, owner, chunksSent, now] }) as Promise<void>;
  }
  finishDelivery(id: string, owner: string, outcome: DeliveryOutcome, now: number): Promise<void> {
    return this.writes.write({ op: 'finishDelivery', args: [id, owner, outcome, now] }) as Promise<void>;
  }
  retryDelivery(id: string, now: number): Promise<Delivery | undefined> {
    return this.writes.write({ op: 'retryDelivery', args: [id, now] }) as Promise<Delivery | undefined>;
  }
  // ——— writes: operators and maintenance ———
  requeueRun(id: string, now: number): Promise<Run | undefined> {
    return this.writes.write({ op: 'requeueRun', args: [id, now] }) as Promise<Run | undefined>;
  }
  requeueFailedRuns(since: number, now: number): Promise<string[]> {
    return this.writes.write({ op: 'requeueFailedRuns', args: [since, now] }) as Promise<string[]>;
  }
  prune(...args: Parameters<Store['prune']>): ReturnType<Store['prune']> {
    return pruneExpiredSqlite((op) => this.writes.write(op), ...args);
  }
  recoverLeases(now: number): Promise<number> {
    return this.writes.write({ op: 'recoverLeases', args: [now] }) as Promise<number>;
  }
  registerNode(node: NodeInfo): Promise<void> {
    return this.writes.write({ op: 'registerNode', args: [node] }) as Promise<void>;
  }
  removeNode(id: string): Promise<void> {
    return this.writes.write({ op: 'removeNode', args: [id] }) as Promise<void>;
  }
  probeWrite(now: number): Promise<void> {
    return this.writes.write({ op: 'probeWrite', args: [now] }) as Promise<void>;
  }
  // ——— writes: Gmail (sqlite-gmail.ts) and the audit trail (sqlite-audit.ts) ———
  recordGmailPush(push: GmailPush): Promise<{ duplicate: boolean }> {
    return this.writes.write({ op: 'recordGmailPush', args: [push] }) as Promise<{ duplicate: boolean }>;
  }
  completeGmailFetch(c: GmailFetchCompletion): Promise<void> {
    return this.writes.write({ op: 'completeGmailFetch', args: [c] }) as Promise<void>;
  }
  recordGmailWatch(w: { account: string; expiration: number; historyId: string; now: number }): Promise<void> {
    return this.writes.write({ op: 'recordGmailWatch', args: [w] }) as Promise<void>;
  }
  recordGmailError(account: string, error: string | null, now: number): Promise<void> {
    return this.writes.write({ op: 'recordGmailError', args: [account, error, now] }) as Promise<void>;
  }
  appendAudit(entries: AuditEntry[]): Promise<void> {
    return this.writes.write({ op: 'appendAudit', args: [entries] }) as Promise<void>;
  }
  pruneAudit(before: number): Promise<number> {
    return this.writes.write({ op: 'pruneAudit', args: [before] }) as Promise<number>;
  }
  pruneFinished(...args: Parameters<Store['pruneFinished']>): ReturnType<Store['pruneFinished']> {
    return pruneFinishedSqlite((op) => this.writes.write(op), ...args);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.writes.idle();
    this.closed = true;
    this.writes.close();
    await this.readThread?.close();
    // Workers are unref'd while serving; hold the event loop open until each has closed its connection. The
    // checkpointer goes first, so the last connection (this one) does the final checkpoint and removes the WAL.
    for (const worker of [this.checkpointer?.worker, this.worker]) {
      if (!worker) continue;
      worker.ref();
      await new Promise<void>((resolve) => {
        worker.once('exit', () => resolve());
        worker.postMessage({ close: true });
      });
    }
    // The last connection's close checkpoints through the -shm's map: with the file immutable that is a SIGBUS. Left
    // open instead (the process is ending); the WAL holds every commit and the next start replays it.
    if (this.shm?.refused())
      this.onWarning?.(
        'the store is left open at stop: its -shm file cannot be written, and closing would write it; the next start recovers from the WAL',
      );
    else this.db.close();
    this.identity?.close();
  }
}
