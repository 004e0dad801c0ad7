import { dirname } from 'node:path';
import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { StoreError, StoreSchemaError } from '../errors.js';
import { exposedPaths } from '../private-files.js';
import { logPath } from '../text-safe.js';
import { pendingGmailPushesSqlite, readGmailStatusSqlite } from './sqlite-gmail.js';
import { pageAuditSqlite } from './sqlite-audit.js';
import type { AuditEntry, AuditPageQuery } from './audit-types.js';
import { GroupCommit, type WriteResult } from './group-commit.js';
import { openSqlite } from './sqlite-open.js';
import { prepared } from './sqlite-prepared.js';
import { rowToDelivery, rowToEvent, rowToMessage, rowToNode, rowToRefusals, rowToRoute, rowToRun, rowToSessionSummary, type ReceivedTuple, type Row, tupleToReceived } from './record-encoding.js';
import { type WriteArgs, type WriteKind, type WriteOp, type WriteValue, WRITE_OPS } from './sqlite-write-ops.js';
import { SqliteWriter } from './sqlite-writer.js';
import { SqlitePages } from './sqlite-pages.js';
import type { DeliveryPageQuery, Page, QueueDepths, ReceivedPageQuery, ReceivedRecord, RecentFailures, RunPageQuery } from './pages.js';
import type { CheckpointReply, CheckpointWorkerData } from './sqlite-checkpoint-worker.js';
import { assertWritableStore, ShmGuard, StoreFileIdentity, WAL_KEEP_BYTES, WalBound } from './sqlite-files.js';
import type { SchemaPolicy } from './schema-version.js';
import { startWorker } from './start-worker.js';
import { LocalCluster } from './local-cluster.js';
import type { ClusterNotice, Delivery, GmailPush, GmailStatus, DeliveryState, ListRunsQuery, NodeInfo, ReceivedHook, Run, SessionDetail, SessionMessage, SessionRoute, SessionSummary, Store, SystemEvent } from './types.js';

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
}

/** How often the checkpoint thread copies the WAL back (while idle, a checkpoint with nothing to copy is a no-op). */
const CHECKPOINT_INTERVAL_MS = 250;
/** SQLite's own default, restored on the writing connection if the checkpoint thread stops. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

/** The reads on the store's own connection: each probes the -shm first, as a write batch does (ShmGuard). */
const GUARDED_READS = [
  'listNodes', 'pageRuns', 'pageDeliveries', 'pageReceived', 'queueDepths', 'failuresSince', 'getRun', 'listRuns', 'listSessions', 'getSession',
  'listReceived', 'pendingEvents', 'sessionsWithPendingEvents', 'sessionMessages', 'getRoute', 'listDeliveries', 'getDelivery', 'readGmailStatus',
  'pendingGmailPushes', 'pageAudit',
] as const satisfies readonly (keyof SqliteStore)[];

/** The writes of the store: one forwarder each, derived from WRITE_OPS (see the static block of SqliteStore). */
type SqliteWrites = { [K in WriteKind]: (...args: WriteArgs<K>) => Promise<WriteValue<K>> };
// Declaration merging: the class below installs these methods on its prototype; `implements Store` checks them.
export interface SqliteStore extends SqliteWrites {}

/**
 * SQLite driver. Reads run on the caller's connection; writes are committed in batches by one writer, inline or on
 * a writer thread (group commit: see group-commit.ts). Write ops and their SQL: sqlite-write-ops.ts,
 * sqlite-statements.ts.
 */
export class SqliteStore implements Store {
  static {
    for (const kind of Object.keys(WRITE_OPS) as WriteKind[]) {
      Object.defineProperty(SqliteStore.prototype, kind, {
        value: function (this: SqliteStore, ...args: unknown[]) {
          return this.writes.write({ op: kind, args } as WriteOp);
        },
        writable: true,
        configurable: true,
      });
    }
    for (const name of GUARDED_READS) {
      const read = SqliteStore.prototype[name] as (...args: unknown[]) => Promise<unknown>;
      Object.defineProperty(SqliteStore.prototype, name, {
        value: function (this: SqliteStore, ...args: unknown[]) {
          const refused = this.shm?.refused();
          return refused ? Promise.reject(refused) : read.apply(this, args);
        },
        writable: true,
        configurable: true,
      });
    }
  }

  readonly db: Database.Database;
  private readonly writes: GroupCommit<WriteOp>;
  private closed = false;
  private readonly worker: Worker | undefined;
  private readonly inlineWriter: SqliteWriter | undefined;
  private checkpointer: Worker | undefined;
  private readonly onWarning: ((message: string) => void) | undefined;
  private readonly onError: ((message: string) => void) | undefined;
  private readonly identity: StoreFileIdentity | undefined;
  private readonly shm: ShmGuard | undefined;
  private walBound: WalBound | undefined;
  private workerWaiters: Array<{ resolve: (results: WriteResult[]) => void; reject: (e: StoreError) => void }> = [];

  constructor(opts: SqliteStoreOptions) {
    this.writes = new GroupCommit((ops) => this.commit(ops), opts.onCommit, opts.ingressBusy);
    const synchronous = opts.synchronous ?? 'normal';
    // Looked at before opening creates anything: only what a user (or an older version) left open is reported.
    const exposed = opts.path === ':memory:' ? [] : exposedPaths([dirname(opts.path), opts.path, `${opts.path}-wal`, `${opts.path}-shm`]);
    if (opts.path !== ':memory:') assertWritableStore(opts.path);
    try {
      this.db = openSqlite(opts.path, synchronous, opts.busyTimeoutMs, { schemaPolicy: opts.schemaPolicy, onSchema: opts.onSchema });
    } catch (err) {
      if (err instanceof StoreSchemaError) throw err;
      throw new StoreError(`cannot open SQLite store at ${opts.path}: ${(err as Error).message}`, { cause: err });
    }
    this.identity = opts.path === ':memory:' ? undefined : new StoreFileIdentity(opts.path);
    this.onWarning = opts.onWarning;
    this.onError = opts.onError;
    this.shm = opts.path === ':memory:' ? undefined : new ShmGuard(`${opts.path}-shm`, (refused) =>
      refused
        ? this.onError?.(`${refused.message} Every read and write is refused (503) until it can be written again.`)
        : this.onWarning?.(`the store's -shm file can be written again: reads and writes go on`));
    if (exposed.length) {
      this.onWarning?.(`the store is readable by group or others: ${exposed.map((e) => `${logPath(e.path, 300)} (mode ${e.mode})`).join(', ')}; it holds transcripts and replies: chmod 700 the directory and 600 the files`);
    }
    if ((opts.writer ?? 'thread') === 'inline' || opts.path === ':memory:') {
      this.inlineWriter = new SqliteWriter(this.db);
      if (opts.checkpoints === 'thread' && opts.path !== ':memory:') {
        this.startCheckpointer({ path: opts.path, synchronous, busyTimeoutMs: opts.busyTimeoutMs ?? 5000, intervalMs: CHECKPOINT_INTERVAL_MS });
      }
      return;
    }
    this.worker = startWorker('./sqlite-worker', import.meta.url, { path: opts.path, synchronous, busyTimeoutMs: opts.busyTimeoutMs ?? 5000 });
    this.worker.unref();
    this.worker.on('message', (msg: { results?: WriteResult[] }) => {
      if (msg.results) this.workerWaiters.shift()?.resolve(msg.results);
    });
    this.worker.on('error', (err) => this.fail(new StoreError(`SQLite writer failed: ${err.message}`, { cause: err })));
    this.worker.on('exit', (code) => {
      if (!this.closed) this.fail(new StoreError(`SQLite writer exited (code ${code})`));
    });
  }

  /**
   * The writing connection stops checkpointing; a thread of its own does it (see sqlite-checkpoint-worker.ts), and
   * `WalBound` holds the writes for a moment when the WAL passes its size. A WAL started over is cut back to
   * WAL_KEEP_BYTES (journal_size_limit, on this connection: the one that starts it over).
   */
  private startCheckpointer(data: CheckpointWorkerData): void {
    this.db.pragma('wal_autocheckpoint = 0');
    this.db.pragma(`journal_size_limit = ${WAL_KEEP_BYTES}`);
    // Its own V8 isolate: a young generation of 1 MiB is plenty for a timer and a pragma (the default let it reach
    // 4 MiB; measured −3 MiB RSS). No old-generation cap: running out would end the thread (it falls back, but why risk it).
    const worker = startWorker('./sqlite-checkpoint-worker', import.meta.url, data, { maxYoungGenerationSizeMb: 1 });
    worker.unref();
    this.checkpointer = worker;
    const bound = new WalBound(`${data.path}-wal`, worker);
    this.walBound = bound;
    worker.on('message', (msg: CheckpointReply) => {
      if ('seq' in msg) bound.answered(msg);
      else if ('failing' in msg) {
        this.onWarning?.(`WAL checkpoints are failing (${msg.failing.code}: ${msg.failing.message}); retried every ${data.intervalMs} ms, the WAL grows until one succeeds`);
      } else this.onWarning?.('WAL checkpoints work again');
    });
    const fallBack = (why: string) => {
      bound.release();
      if (this.closed || this.checkpointer !== worker) return;
      this.checkpointer = undefined;
      this.db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
      this.onWarning?.(`the WAL checkpoint thread stopped (${why}); checkpoints run on the writing connection again`);
    };
    // An error crossing the thread may arrive as a plain object: its code and message are read, not assumed.
    worker.on('error', (err: unknown) => {
      const e = (err ?? {}) as { code?: unknown; message?: unknown };
      fallBack([e.code, e.message ?? String(err)].filter((x) => typeof x === 'string' && x).join(': '));
    });
    worker.on('exit', (code) => fallBack(`exit code ${code}`));
  }

  private commit(ops: WriteOp[]): Promise<WriteResult[]> {
    const broken = this.writes.failure;
    if (broken) return Promise.reject(broken);
    const hold = this.walBound?.hold;
    if (hold) return hold.then(() => this.commit(ops));
    const refused = this.shm?.refused();
    if (refused) return Promise.reject(refused);
    if (this.inlineWriter) return this.committed(this.inlineWriter.runBatch(ops));
    return new Promise<WriteResult[]>((resolve, reject) => {
      this.workerWaiters.push({ resolve, reject });
      this.worker!.postMessage({ batch: ops });
    }).then((results) => this.committed(results));
  }

  /**
   * A batch is answered only if the database is still the file at its path after it committed: once it was
   * deleted, moved or replaced, this batch and every later write fail (503). So at most the batches already
   * answered when the file went away can be answered 200 after it did (one batch, about 15–20 requests at 50
   * connections); nothing checked after that is.
   */
  private committed(results: WriteResult[]): Promise<WriteResult[]> {
    const lost = this.identity?.lost();
    if (lost) {
      const err = new StoreError(
        `the SQLite store ${this.db.name} ${lost} while hookgate was running: every write is refused from now on (503), as what it accepted would not be there after a restart; put the file back or restart on a new store`,
      );
      if (!this.writes.failure) this.onError?.(err.message);
      this.fail(err);
      return Promise.reject(err);
    }
    this.walBound?.afterCommit();
    return Promise.resolve(results);
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
  async listNodes(): Promise<NodeInfo[]> {
    return (this.db.prepare('SELECT * FROM nodes ORDER BY last_seen_at DESC').all() as Row[]).map(rowToNode);
  }

  // ——— the admin listener's reads (sqlite-pages.ts) ———
  private pagesOf: SqlitePages | undefined;
  private get pages(): SqlitePages {
    return (this.pagesOf ??= new SqlitePages(this.db));
  }
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

  async getRun(id: string): Promise<Run | undefined> {
    const row = this.db.prepare('SELECT * FROM runs WHERE id = ?').get(id) as Row | undefined;
    return row && rowToRun(row);
  }

  async listRuns(q: ListRunsQuery = {}): Promise<Run[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.state) (where.push('state = ?'), params.push(q.state));
    if (q.sessionKey) (where.push('session_key = ?'), params.push(q.sessionKey));
    const sql = `SELECT * FROM runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, q.limit ?? 50) as Row[]).map(rowToRun);
  }

  async listSessions(limit = 50): Promise<SessionSummary[]> {
    const rows = this.db
      .prepare(
        `WITH activity AS (
           SELECT session_key AS key, agent_id, created_at FROM runs
           UNION ALL SELECT session_key, agent_id, created_at FROM system_events
           UNION ALL SELECT key, agent_id, updated_at FROM sessions)
         SELECT a.key, MIN(a.agent_id) AS agent_id, MAX(a.created_at) AS last_at,
           (SELECT COUNT(*) FROM system_events e WHERE e.session_key = a.key AND e.consumed_at IS NULL) AS pending,
           (SELECT COUNT(*) FROM runs r WHERE r.session_key = a.key) AS runs,
           s.last_channel, s.last_to, s.last_account_id
         FROM activity a LEFT JOIN sessions s ON s.key = a.key
         GROUP BY a.key ORDER BY last_at DESC LIMIT ?`,
      )
      .all(limit) as Row[];
    return rows.map(rowToSessionSummary);
  }

  async getSession(key: string): Promise<SessionDetail | undefined> {
    const summary = this.sessionSummary(key);
    if (!summary) return undefined;
    const pending = (
      this.db.prepare('SELECT * FROM system_events WHERE session_key = ? AND consumed_at IS NULL ORDER BY seq').all(key) as Row[]
    ).map(rowToEvent);
    const recentEvents = (
      this.db.prepare('SELECT * FROM system_events WHERE session_key = ? ORDER BY seq DESC LIMIT 20').all(key) as Row[]
    ).map(rowToEvent);
    const recentRuns = (this.db.prepare('SELECT * FROM runs WHERE session_key = ? ORDER BY seq DESC LIMIT 20').all(key) as Row[]).map(rowToRun);
    const transcript = (
      this.db.prepare('SELECT * FROM (SELECT * FROM session_messages WHERE session_key = ? ORDER BY seq DESC LIMIT 40) ORDER BY seq').all(key) as Row[]
    ).map(rowToMessage);
    return { ...summary, transcript, pending, recentEvents, recentRuns };
  }

  private sessionSummary(key: string): SessionSummary | undefined {
    const row = this.db
      .prepare(
        `WITH activity AS (
           SELECT agent_id, created_at FROM runs WHERE session_key = @key
           UNION ALL SELECT agent_id, created_at FROM system_events WHERE session_key = @key
           UNION ALL SELECT agent_id, updated_at FROM sessions WHERE key = @key)
         SELECT @key AS key, MIN(agent_id) AS agent_id, MAX(created_at) AS last_at,
           (SELECT COUNT(*) FROM system_events e WHERE e.session_key = @key AND e.consumed_at IS NULL) AS pending,
           (SELECT COUNT(*) FROM runs r WHERE r.session_key = @key) AS runs,
           (SELECT last_channel FROM sessions WHERE key = @key) AS last_channel,
           (SELECT last_to FROM sessions WHERE key = @key) AS last_to,
           (SELECT last_account_id FROM sessions WHERE key = @key) AS last_account_id
         FROM activity HAVING COUNT(*) > 0`,
      )
      .get({ key }) as Row | undefined;
    return row && rowToSessionSummary(row);
  }

  async listReceived(limit = 50, filter: { rejected?: boolean } = {}): Promise<ReceivedHook[]> {
    if (limit <= 0) return [];
    const records = this.receivedRecords(limit, filter.rejected ?? false);
    const counts: ReceivedHook[] = [];
    for (const row of this.db.prepare('SELECT at, window_ms, counts FROM refusal_log ORDER BY seq DESC').iterate() as IterableIterator<Row>) {
      counts.push(...rowToRefusals(row));
      if (counts.length >= limit) break;
    }
    if (counts.length === 0) return records;
    // Both lists are newest first; a window's counts sort by the window's start (stable: largest count first).
    return [...records, ...counts].sort((a, b) => b.at - a.at).slice(0, limit);
  }

  private receivedRecords(limit: number, rejected: boolean): ReceivedHook[] {
    const out: ReceivedHook[] = [];
    // Blocks newest first, each block's records newest first; stops as soon as `limit` records are found.
    for (const row of this.db.prepare('SELECT records FROM received_log ORDER BY seq DESC').iterate() as IterableIterator<{ records: string }>) {
      const block = JSON.parse(row.records) as ReceivedTuple[];
      for (let i = block.length - 1; i >= 0; i--) {
        const rec = tupleToReceived(block[i]!);
        if (rejected && rec.status < 400) continue;
        out.push(rec);
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  // ——— runtime ———
  async pendingEvents(sessionKey: string, limit = 1000): Promise<SystemEvent[]> {
    return (
      prepared(this.db, 'SELECT * FROM system_events WHERE session_key = ? AND consumed_at IS NULL ORDER BY seq LIMIT ?').all(sessionKey, limit) as Row[]
    ).map(rowToEvent);
  }
  async sessionsWithPendingEvents(limit = 1000): Promise<string[]> {
    // DISTINCT over the pending index (session_key, seq): as small as the queue, whatever the history.
    const rows = prepared(this.db, 'SELECT DISTINCT session_key FROM system_events WHERE consumed_at IS NULL LIMIT ?').all(limit) as Row[];
    return rows.map((r) => r.session_key as string);
  }
  async sessionMessages(agentId: string, sessionKey: string, limit: number): Promise<SessionMessage[]> {
    return (
      prepared(this.db, 'SELECT * FROM (SELECT * FROM session_messages WHERE agent_id = ? AND session_key = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq')
        .all(agentId, sessionKey, limit) as Row[]
    ).map(rowToMessage);
  }
  async getRoute(sessionKey: string): Promise<SessionRoute | undefined> {
    return rowToRoute(prepared(this.db, 'SELECT last_channel, last_to, last_account_id FROM sessions WHERE key = ?').get(sessionKey) as Row | undefined);
  }
  async listDeliveries(q: { state?: DeliveryState; runId?: string; limit?: number } = {}): Promise<Delivery[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.state) (where.push('state = ?'), params.push(q.state));
    if (q.runId) (where.push('run_id = ?'), params.push(q.runId));
    const sql = `SELECT * FROM deliveries ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, q.limit ?? 50) as Row[]).map(rowToDelivery);
  }
  async getDelivery(id: string): Promise<Delivery | undefined> {
    const row = this.db.prepare('SELECT * FROM deliveries WHERE id = ?').get(id) as Row | undefined;
    return row && rowToDelivery(row);
  }

  readGmailStatus(account: string): Promise<GmailStatus | undefined> {
    return readGmailStatusSqlite(this.db, account);
  }
  pendingGmailPushes(account?: string, limit?: number): Promise<GmailPush[]> {
    return pendingGmailPushesSqlite(this.db, account, limit);
  }
  pageAudit(q: AuditPageQuery): Promise<Page<AuditEntry>> {
    return pageAuditSqlite(this.db, q);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.writes.idle();
    this.closed = true;
    this.writes.close();
    // Workers are unref'd while serving; hold the event loop open until each has closed its connection. The
    // checkpointer goes first, so the last connection (this one) does the final checkpoint and removes the WAL.
    for (const worker of [this.checkpointer, this.worker]) {
      if (!worker) continue;
      worker.ref();
      await new Promise<void>((resolve) => {
        worker.once('exit', () => resolve());
        worker.postMessage({ close: true });
      });
    }
    // The last connection's close checkpoints through the -shm's map: with the file immutable that is a SIGBUS. Left
    // open instead (the process is ending); the WAL holds every commit and the next start replays it.
    if (this.shm?.refused()) this.onWarning?.('the store is left open at stop: its -shm file cannot be written, and closing would write it; the next start recovers from the WAL');
    else this.db.close();
    this.identity?.close();
  }
}

