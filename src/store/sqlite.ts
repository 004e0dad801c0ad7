import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { StoreError } from '../errors.js';
import { openSqlite } from './sqlite-open.js';
import { SqliteWriter, type WriteOp, type WriteResult } from './sqlite-writer.js';
import type {
  AcceptCommand,
  AcceptResult,
  ListRunsQuery,
  ReceivedHook,
  Run,
  SessionDetail,
  SessionSummary,
  Store,
  SystemEvent,
} from './types.js';

export interface SqliteStoreOptions {
  path: string;
  /** "normal": survives process crashes (WAL); "full": fsync on every commit, survives power loss. */
  synchronous?: 'normal' | 'full';
  /**
   * Where writes run: "thread" (default for the service) keeps SQLite off the request thread;
   * "inline" writes on the caller's thread (CLI commands, tests).
   */
  writer?: 'thread' | 'inline';
  /** How long a write waits for a lock held by another process before it fails (→ 503). */
  busyTimeoutMs?: number;
}

interface Pending {
  op: WriteOp;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

type Row = Record<string, unknown>;

/**
 * Start a worker from a sibling module. Built, that is a .js file; from source (tests under tsx) it is .ts and
 * the worker registers tsx first, because Node 20 does not apply `--import` hooks to a worker's entry module.
 */
function startWorker(sibling: string, base: string, workerData: unknown): Worker {
  if (!base.endsWith('.ts')) return new Worker(new URL(`${sibling}.js`, base), { workerData });
  const entry = new URL(`${sibling}.ts`, base).href;
  const code = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true, workerData });
}

/**
 * SQLite driver. Reads run on the caller's connection; writes are queued and committed in batches by one writer
 * (group commit): while a batch commits, new writes gather for the next one, so batches grow with load and each
 * commit is one WAL append. A write is resolved only after its batch committed.
 */
export class SqliteStore implements Store {
  readonly db: Database.Database;
  private queue: Pending[] = [];
  private inFlight = false;
  private closed = false;
  private broken: StoreError | undefined;
  private readonly worker: Worker | undefined;
  private readonly inlineWriter: SqliteWriter | undefined;
  private workerWaiters: Array<{ resolve: (results: WriteResult[]) => void; reject: (e: StoreError) => void }> = [];

  constructor(opts: SqliteStoreOptions) {
    const synchronous = opts.synchronous ?? 'normal';
    try {
      this.db = openSqlite(opts.path, synchronous, opts.busyTimeoutMs);
    } catch (err) {
      throw new StoreError(`cannot open SQLite store at ${opts.path}: ${(err as Error).message}`, { cause: err });
    }
    if ((opts.writer ?? 'thread') === 'inline' || opts.path === ':memory:') {
      this.inlineWriter = new SqliteWriter(this.db);
      return;
    }
    // From source (tests run through tsx, which workers inherit) the sibling is .ts; built, it is .js.
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

  accept(cmd: AcceptCommand): Promise<AcceptResult> {
    return this.write({ op: 'accept', cmd }) as Promise<AcceptResult>;
  }

  async recordReceived(rec: ReceivedHook): Promise<void> {
    await this.write({ op: 'received', rec });
  }

  private write(op: WriteOp): Promise<unknown> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.closed) return Promise.reject(new StoreError('the store is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      if (!this.inFlight) {
        this.inFlight = true;
        // Let the other requests of this turn of the event loop join the batch.
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue;
      this.queue = [];
      let results: WriteResult[];
      try {
        results = await this.commit(batch.map((p) => p.op));
      } catch (err) {
        const e = err instanceof StoreError ? err : new StoreError(`store commit failed: ${(err as Error).message}`, { cause: err });
        for (const p of batch) p.reject(e);
        continue;
      }
      results.forEach((r, i) => {
        const p = batch[i]!;
        if (r.ok) p.resolve(r.value);
        else p.reject(new StoreError(`store write failed: ${r.error}`));
      });
    }
    this.inFlight = false;
  }

  private commit(ops: WriteOp[]): Promise<WriteResult[]> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.inlineWriter) return Promise.resolve(this.inlineWriter.runBatch(ops));
    return new Promise((resolve, reject) => {
      this.workerWaiters.push({ resolve, reject });
      this.worker!.postMessage({ batch: ops });
    });
  }

  private fail(err: StoreError): void {
    this.broken ??= err;
    const waiters = this.workerWaiters;
    this.workerWaiters = [];
    for (const w of waiters) w.reject(err);
    for (const p of this.queue) p.reject(err);
    this.queue = [];
  }

  async getRun(id: string): Promise<Run | undefined> {
    const row = this.db.prepare('SELECT * FROM runs WHERE id = ?').get(id) as Row | undefined;
    return row && toRun(row);
  }

  async listRuns(q: ListRunsQuery = {}): Promise<Run[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.state) (where.push('state = ?'), params.push(q.state));
    if (q.sessionKey) (where.push('session_key = ?'), params.push(q.sessionKey));
    const sql = `SELECT * FROM runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, q.limit ?? 50) as Row[]).map(toRun);
  }

  async requeueRun(id: string, now: number): Promise<Run | undefined> {
    const changed = (await this.write({ op: 'requeue', id, now })) as boolean;
    return changed ? this.getRun(id) : undefined;
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
           s.last_channel, s.last_to
         FROM activity a LEFT JOIN sessions s ON s.key = a.key
         GROUP BY a.key ORDER BY last_at DESC LIMIT ?`,
      )
      .all(limit) as Row[];
    return rows.map(toSessionSummary);
  }

  async getSession(key: string): Promise<SessionDetail | undefined> {
    const summary = (await this.listSessionsWhere(key))[0];
    if (!summary) return undefined;
    const pending = (
      this.db.prepare('SELECT * FROM system_events WHERE session_key = ? AND consumed_at IS NULL ORDER BY seq').all(key) as Row[]
    ).map(toEvent);
    const recentEvents = (
      this.db.prepare('SELECT * FROM system_events WHERE session_key = ? ORDER BY seq DESC LIMIT 20').all(key) as Row[]
    ).map(toEvent);
    const recentRuns = (this.db.prepare('SELECT * FROM runs WHERE session_key = ? ORDER BY seq DESC LIMIT 20').all(key) as Row[]).map(toRun);
    return { ...summary, pending, recentEvents, recentRuns };
  }

  private async listSessionsWhere(key: string): Promise<SessionSummary[]> {
    const rows = this.db
      .prepare(
        `WITH activity AS (
           SELECT agent_id, created_at FROM runs WHERE session_key = @key
           UNION ALL SELECT agent_id, created_at FROM system_events WHERE session_key = @key
           UNION ALL SELECT agent_id, updated_at FROM sessions WHERE key = @key)
         SELECT @key AS key, MIN(agent_id) AS agent_id, MAX(created_at) AS last_at,
           (SELECT COUNT(*) FROM system_events e WHERE e.session_key = @key AND e.consumed_at IS NULL) AS pending,
           (SELECT COUNT(*) FROM runs r WHERE r.session_key = @key) AS runs,
           (SELECT last_channel FROM sessions WHERE key = @key) AS last_channel,
           (SELECT last_to FROM sessions WHERE key = @key) AS last_to
         FROM activity HAVING COUNT(*) > 0`,
      )
      .all({ key }) as Row[];
    return rows.map(toSessionSummary);
  }

  async listReceived(limit = 50): Promise<ReceivedHook[]> {
    return (this.db.prepare('SELECT * FROM received_hooks ORDER BY seq DESC LIMIT ?').all(limit) as Row[]).map((r) => ({
      at: r.at as number,
      method: r.method as string,
      path: r.path as string,
      clientIp: r.client_ip as string,
      status: r.status as number,
      code: (r.code as string | null) ?? null,
      eventIds: r.event_ids ? (JSON.parse(r.event_ids as string) as string[]) : [],
      runIds: r.run_ids ? (JSON.parse(r.run_ids as string) as string[]) : [],
      mappingId: (r.mapping_id as string | null) ?? null,
      durationMs: r.duration_ms as number,
    }));
  }

  async prune(now: number, receivedBefore: number): Promise<{ idempotency: number; received: number }> {
    return (await this.write({ op: 'prune', now, receivedBefore })) as { idempotency: number; received: number };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    while (this.inFlight) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    if (this.worker) {
      await new Promise<void>((resolve) => {
        this.worker!.once('exit', () => resolve());
        this.worker!.postMessage({ close: true });
      });
    }
    this.db.close();
  }
}

function toRun(r: Row): Run {
  return {
    id: r.id as string,
    state: r.state as Run['state'],
    agentId: r.agent_id as string,
    sessionKey: r.session_key as string,
    sessionMode: r.session_mode as Run['sessionMode'],
    name: r.name as string,
    message: r.message as string,
    wakeMode: r.wake_mode as Run['wakeMode'],
    deliver: r.deliver === 1,
    channel: r.channel as string,
    to: (r.recipient as string | null) ?? null,
    model: (r.model as string | null) ?? null,
    thinking: (r.thinking as string | null) ?? null,
    timeoutSeconds: r.timeout_seconds as number,
    allowUnsafeExternalContent: r.allow_unsafe === 1,
    contentSource: r.content_source as Run['contentSource'],
    hookPath: r.hook_path as string,
    mappingId: (r.mapping_id as string | null) ?? null,
    createdAt: r.created_at as number,
    updatedAt: r.updated_at as number,
    startedAt: (r.started_at as number | null) ?? null,
    finishedAt: (r.finished_at as number | null) ?? null,
    attempts: r.attempts as number,
    error: (r.error as string | null) ?? null,
    reply: (r.reply as string | null) ?? null,
  };
}

function toEvent(r: Row): SystemEvent {
  return {
    id: r.id as string,
    sessionKey: r.session_key as string,
    agentId: r.agent_id as string,
    text: r.text as string,
    origin: r.origin as SystemEvent['origin'],
    runId: (r.run_id as string | null) ?? null,
    createdAt: r.created_at as number,
    consumedAt: (r.consumed_at as number | null) ?? null,
  };
}

function toSessionSummary(r: Row): SessionSummary {
  return {
    key: r.key as string,
    agentId: r.agent_id as string,
    pendingEvents: r.pending as number,
    runs: r.runs as number,
    lastActivityAt: r.last_at as number,
    lastChannel: (r.last_channel as string | null) ?? null,
    lastTo: (r.last_to as string | null) ?? null,
  };
}
