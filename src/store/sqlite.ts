import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StoreError } from '../errors.js';
import { SQLITE_MIGRATIONS } from './sqlite-schema.js';
import type {
  AcceptCommand,
  AcceptOutcome,
  AcceptResult,
  ListRunsQuery,
  NewRun,
  ReceivedHook,
  Run,
  SessionDetail,
  SessionSummary,
  Store,
  StoredAnswer,
  SystemEvent,
} from './types.js';

export interface SqliteStoreOptions {
  path: string;
  /** "normal": survives process crashes (WAL); "full": fsync on every commit, survives power loss. */
  synchronous?: 'normal' | 'full';
}

type Job =
  | { kind: 'accept'; cmd: AcceptCommand; answer: (o: AcceptOutcome) => StoredAnswer; resolve: (r: AcceptResult) => void; reject: (e: unknown) => void }
  | { kind: 'received'; rec: ReceivedHook; resolve: () => void; reject: (e: unknown) => void };

type Row = Record<string, unknown>;

/**
 * SQLite driver. Writes from concurrent requests are queued and committed together in one transaction on the
 * next turn of the event loop (group commit): one WAL append per batch instead of one per request. Each job runs
 * in its own savepoint so one failing job cannot take the others' writes with it.
 */
export class SqliteStore implements Store {
  readonly db: Database.Database;
  private queue: Job[] = [];
  private flushScheduled = false;
  private closed = false;
  private readonly stmt;
  private readonly runBatch: (jobs: Job[]) => Array<{ ok: true; value: unknown } | { ok: false; error: unknown }>;

  constructor(opts: SqliteStoreOptions) {
    if (opts.path !== ':memory:') mkdirSync(dirname(opts.path), { recursive: true });
    try {
      this.db = new Database(opts.path);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma(`synchronous = ${opts.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      this.db.pragma('busy_timeout = 5000');
      migrate(this.db);
    } catch (err) {
      throw new StoreError(`cannot open SQLite store at ${opts.path}: ${(err as Error).message}`, { cause: err });
    }
    const db = this.db;
    this.stmt = {
      lastPending: db.prepare(
        'SELECT id, text FROM system_events WHERE session_key = ? AND consumed_at IS NULL ORDER BY seq DESC LIMIT 1',
      ),
      insertEvent: db.prepare(
        `INSERT INTO system_events (id, session_key, agent_id, text, origin, run_id, created_at)
         VALUES (@id, @sessionKey, @agentId, @text, @origin, @runId, @createdAt)`,
      ),
      insertRun: db.prepare(
        `INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel,
           recipient, model, thinking, timeout_seconds, allow_unsafe, content_source, hook_path, mapping_id, created_at, updated_at)
         VALUES (@id, 'queued', @agentId, @sessionKey, @sessionMode, @name, @message, @wakeMode, @deliver, @channel,
           @to, @model, @thinking, @timeoutSeconds, @allowUnsafe, @contentSource, @hookPath, @mappingId, @createdAt, @createdAt)`,
      ),
      getIdem: db.prepare('SELECT fingerprint, status, body, expires_at FROM idempotency WHERE scope = ? AND key_hash = ?'),
      deleteIdem: db.prepare('DELETE FROM idempotency WHERE scope = ? AND key_hash = ?'),
      insertIdem: db.prepare(
        `INSERT INTO idempotency (scope, key_hash, fingerprint, status, body, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      insertReceived: db.prepare(
        `INSERT INTO received_hooks (at, method, path, client_ip, status, code, event_ids, run_ids, mapping_id, duration_ms)
         VALUES (@at, @method, @path, @clientIp, @status, @code, @eventIds, @runIds, @mappingId, @durationMs)`,
      ),
      getRun: db.prepare('SELECT * FROM runs WHERE id = ?'),
      requeue: db.prepare(
        `UPDATE runs SET state = 'queued', updated_at = ?, finished_at = NULL, lease_owner = NULL, lease_until = NULL
         WHERE id = ? AND state IN ('failed', 'timed_out', 'succeeded')`,
      ),
    };
    const one = db.transaction((job: Job) => this.execute(job));
    this.runBatch = db.transaction((jobs: Job[]) =>
      jobs.map((job) => {
        try {
          return { ok: true as const, value: one(job) };
        } catch (error) {
          return { ok: false as const, error };
        }
      }),
    );
  }

  accept(cmd: AcceptCommand, answer: (o: AcceptOutcome) => StoredAnswer): Promise<AcceptResult> {
    return new Promise((resolve, reject) => this.enqueue({ kind: 'accept', cmd, answer, resolve, reject }));
  }

  recordReceived(rec: ReceivedHook): Promise<void> {
    return new Promise((resolve, reject) => this.enqueue({ kind: 'received', rec, resolve, reject }));
  }

  private enqueue(job: Job): void {
    if (this.closed) {
      job.reject(new StoreError('the store is closed'));
      return;
    }
    this.queue.push(job);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Commit everything queued so far in one transaction. */
  private flush(): void {
    this.flushScheduled = false;
    const jobs = this.queue;
    this.queue = [];
    if (jobs.length === 0) return;
    let results: ReturnType<typeof this.runBatch>;
    try {
      results = this.runBatch(jobs);
    } catch (err) {
      const e = new StoreError(`store commit failed: ${(err as Error).message}`, { cause: err });
      for (const job of jobs) job.reject(e);
      return;
    }
    results.forEach((r, i) => {
      const job = jobs[i]!;
      if (!r.ok) job.reject(new StoreError(`store write failed: ${(r.error as Error).message}`, { cause: r.error }));
      else if (job.kind === 'accept') job.resolve(r.value as AcceptResult);
      else job.resolve();
    });
  }

  private execute(job: Job): unknown {
    if (job.kind === 'received') {
      this.insertReceived(job.rec);
      return undefined;
    }
    const { cmd, answer } = job;
    const now = cmd.received.at;
    const idem = cmd.idempotency;
    if (idem) {
      const row = this.stmt.getIdem.get(idem.scope, idem.keyHash) as Row | undefined;
      if (row && (row.expires_at as number) > now) {
        if (row.fingerprint !== idem.fingerprint) {
          this.insertReceived({ ...cmd.received, status: 409, code: 'idempotency_conflict' });
          return { kind: 'conflict' } satisfies AcceptResult;
        }
        const stored: StoredAnswer = { status: row.status as number, body: JSON.parse(row.body as string) };
        this.insertReceived({ ...cmd.received, status: stored.status, code: 'duplicate' });
        return { kind: 'duplicate', answer: stored } satisfies AcceptResult;
      }
      if (row) this.stmt.deleteIdem.run(idem.scope, idem.keyHash);
    }

    const outcome: AcceptOutcome = { events: [] };
    for (const ev of cmd.events) {
      const last = this.stmt.lastPending.get(ev.sessionKey) as Row | undefined;
      if (last && last.text === ev.text) {
        outcome.events.push({ eventId: last.id as string, outcome: 'coalesced' });
        continue;
      }
      this.stmt.insertEvent.run({ ...ev, runId: ev.runId ?? null });
      outcome.events.push({ eventId: ev.id, outcome: 'queued' });
    }
    for (const run of cmd.runs) this.stmt.insertRun.run(runParams(run));

    const stored = answer(outcome);
    if (idem) {
      this.stmt.insertIdem.run(idem.scope, idem.keyHash, idem.fingerprint, stored.status, JSON.stringify(stored.body), now, idem.expiresAt);
    }
    this.insertReceived({
      ...cmd.received,
      status: stored.status,
      eventIds: outcome.events.map((e) => e.eventId),
      runIds: cmd.runs.map((r) => r.id),
    });
    return { kind: 'accepted', answer: stored, outcome } satisfies AcceptResult;
  }

  private insertReceived(rec: ReceivedHook): void {
    this.stmt.insertReceived.run({
      ...rec,
      eventIds: rec.eventIds.length ? JSON.stringify(rec.eventIds) : null,
      runIds: rec.runIds.length ? JSON.stringify(rec.runIds) : null,
    });
  }

  async getRun(id: string): Promise<Run | undefined> {
    const row = this.stmt.getRun.get(id) as Row | undefined;
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
    const changed = this.stmt.requeue.run(now, id).changes;
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
           SELECT agent_id, created_at FROM runs WHERE session_key = ?1
           UNION ALL SELECT agent_id, created_at FROM system_events WHERE session_key = ?1
           UNION ALL SELECT agent_id, updated_at FROM sessions WHERE key = ?1)
         SELECT ?1 AS key, MIN(agent_id) AS agent_id, MAX(created_at) AS last_at,
           (SELECT COUNT(*) FROM system_events e WHERE e.session_key = ?1 AND e.consumed_at IS NULL) AS pending,
           (SELECT COUNT(*) FROM runs r WHERE r.session_key = ?1) AS runs,
           (SELECT last_channel FROM sessions WHERE key = ?1) AS last_channel,
           (SELECT last_to FROM sessions WHERE key = ?1) AS last_to
         FROM activity HAVING COUNT(*) > 0`,
      )
      .all(key) as Row[];
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
    const idempotency = this.db.prepare('DELETE FROM idempotency WHERE expires_at <= ?').run(now).changes;
    const received = this.db.prepare('DELETE FROM received_hooks WHERE at < ?').run(receivedBefore).changes;
    return { idempotency, received };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.db.close();
  }
}

function migrate(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  for (let v = version; v < SQLITE_MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(SQLITE_MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

function runParams(run: NewRun): Record<string, unknown> {
  return {
    ...run,
    deliver: run.deliver ? 1 : 0,
    allowUnsafe: run.allowUnsafeExternalContent ? 1 : 0,
  };
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
