/**
 * The SQLite driver's reads on the store's own connection (the admin listener's pages: sqlite-pages.ts). SqliteStore
 * forwards to them after probing the -shm (ShmGuard in sqlite-files.ts).
 */
import { countRunsOf, indexedRunsOf, NO_MORE_TERMS, newestRunsOfSession, ownRunOf } from './own-session.js';
import type Database from 'better-sqlite3';
import type { AuditEntry, AuditPageQuery } from './audit-types.js';
import type { Page } from './pages.js';
import {
  listSessionsSql,
  rowToDelivery,
  rowToEvent,
  rowToMessage,
  rowToNode,
  rowToRefusals,
  rowToRoute,
  rowToRun,
  rowToSessionSummary,
  type ReceivedTuple,
  type Row,
  tupleToReceived,
} from './record-encoding.js';
import { pageAuditSqlite } from './sqlite-audit.js';
import { pendingGmailPushesSqlite, readGmailStatusSqlite } from './sqlite-gmail.js';
import { prepared } from './sqlite-prepared.js';
import {
  type Delivery,
  type DeliveryState,
  type GmailPush,
  type GmailStatus,
  type ListRunsQuery,
  MAIN_SESSION_KEY,
  type NodeInfo,
  type ReceivedHook,
  type Run,
  type SessionDetail,
  type SessionMessage,
  type SessionRoute,
  type SessionSummary,
  type SystemEvent,
} from './types.js';

/**
 * SQL: the events of session `@key`. Outside the main session the term of `system_events_by_session`'s WHERE is
 * added, so that the planner takes that index; the main session's events are most of the table and are not in it.
 */
const eventsOf = (key: string): string =>
  key === MAIN_SESSION_KEY ? 'session_key = @key' : `session_key = @key AND session_key <> '${MAIN_SESSION_KEY}'`;

/**
 * A session's last 40 transcript turns, of every agent. session_messages_by_key leads with the agent (the runtime
 * reads one agent's turns): the agents are found by a walk of that index's first column (one seek per agent), and
 * the session's turns of each by a seek, instead of a scan of every turn kept (295 → 0.4 ms on a store of 10⁶
 * requests).
 */
const LAST_TURNS_SQL = `WITH RECURSIVE agents(id) AS (
    SELECT MIN(agent_id) FROM session_messages
    UNION ALL SELECT (SELECT MIN(agent_id) FROM session_messages WHERE agent_id > agents.id) FROM agents
      WHERE agents.id IS NOT NULL)
  SELECT * FROM (SELECT * FROM session_messages WHERE agent_id IN (SELECT id FROM agents) AND session_key = ?
    ORDER BY seq DESC LIMIT 40) ORDER BY seq`;

export class SqliteReads {
  constructor(private readonly db: Database.Database) {}

  async listNodes(): Promise<NodeInfo[]> {
    return (this.db.prepare('SELECT * FROM nodes ORDER BY last_seen_at DESC').all() as Row[]).map(rowToNode);
  }

  async getRun(id: string): Promise<Run | undefined> {
    const row = this.db.prepare('SELECT * FROM runs WHERE id = ?').get(id) as Row | undefined;
    return row && rowToRun(row);
  }

  async listRuns(q: ListRunsQuery = {}): Promise<Run[]> {
    const limit = q.limit ?? 50;
    if (q.sessionKey) {
      const more = q.state ? { sql: 'state = ?', params: [q.state] } : NO_MORE_TERMS;
      const s = newestRunsOfSession(q.sessionKey, more, limit);
      return (this.db.prepare(s.sql).all(...s.params) as Row[]).map(rowToRun);
    }
    return this.newest('runs', [['state', q.state]], limit).map(rowToRun);
  }

  /** The newest rows of a table (by seq) whose columns equal the values given; an unset value does not filter. */
  private newest(
    table: 'runs' | 'deliveries',
    filters: Array<[column: string, value: string | undefined]>,
    limit: number,
  ): Row[] {
    const set = filters.filter(([, value]) => value);
    const where = set.length ? `WHERE ${set.map(([column]) => `${column} = ?`).join(' AND ')}` : '';
    return this.db
      .prepare(`SELECT * FROM ${table} ${where} ORDER BY seq DESC LIMIT ?`)
      .all(...set.map(([, value]) => value), limit) as Row[];
  }

  async listSessions(limit = 50): Promise<SessionSummary[]> {
    const rows = this.db.prepare(listSessionsSql('?')).all(limit) as Row[];
    return rows.map(rowToSessionSummary);
  }

  async getSession(key: string): Promise<SessionDetail | undefined> {
    const summary = this.sessionSummary(key);
    if (!summary) return undefined;
    const pending = (
      this.db
        .prepare('SELECT * FROM system_events WHERE session_key = ? AND consumed_at IS NULL ORDER BY seq')
        .all(key) as Row[]
    ).map(rowToEvent);
    const recentEvents = (
      this.db
        .prepare(`SELECT * FROM system_events WHERE ${eventsOf(key)} ORDER BY seq DESC LIMIT 20`)
        .all({ key }) as Row[]
    ).map(rowToEvent);
    const runs = newestRunsOfSession(key, NO_MORE_TERMS, 20);
    const recentRuns = (this.db.prepare(runs.sql).all(...runs.params) as Row[]).map(rowToRun);
    const transcript = (this.db.prepare(LAST_TURNS_SQL).all(key) as Row[]).map(rowToMessage);
    return { ...summary, transcript, pending, recentEvents, recentRuns };
  }

  private sessionSummary(key: string): SessionSummary | undefined {
    const row = this.db
      .prepare(
        `WITH activity AS (
           SELECT agent_id, created_at FROM runs r WHERE ${indexedRunsOf('r', '@key')}
           UNION ALL SELECT agent_id, created_at FROM runs r WHERE ${ownRunOf('r', '@key')}
           UNION ALL SELECT agent_id, created_at FROM system_events WHERE ${eventsOf(key)}
           UNION ALL SELECT agent_id, updated_at FROM sessions WHERE key = @key)
         SELECT @key AS key, MIN(agent_id) AS agent_id, MAX(created_at) AS last_at,
           (SELECT COUNT(*) FROM system_events e WHERE e.session_key = @key AND e.consumed_at IS NULL) AS pending,
           ${countRunsOf('@key')} AS runs,
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
    for (const row of this.db
      .prepare('SELECT at, window_ms, counts FROM refusal_log ORDER BY seq DESC')
      .iterate() as IterableIterator<Row>) {
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
    for (const row of this.db
      .prepare('SELECT records FROM received_log ORDER BY seq DESC')
      .iterate() as IterableIterator<{ records: string }>) {
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
      prepared(
        this.db,
        'SELECT * FROM system_events WHERE session_key = ? AND consumed_at IS NULL ORDER BY seq LIMIT ?',
      ).all(sessionKey, limit) as Row[]
    ).map(rowToEvent);
  }
  async sessionsWithPendingEvents(limit = 1000): Promise<string[]> {
    // DISTINCT over the pending index (session_key, seq): as small as the queue, whatever the history.
    const rows = prepared(
      this.db,
      'SELECT DISTINCT session_key FROM system_events WHERE consumed_at IS NULL LIMIT ?',
    ).all(limit) as Row[];
    return rows.map((r) => r.session_key as string);
  }
  async sessionMessages(agentId: string, sessionKey: string, limit: number): Promise<SessionMessage[]> {
    return (
      prepared(
        this.db,
        'SELECT * FROM (SELECT * FROM session_messages WHERE agent_id = ? AND session_key = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq',
      ).all(agentId, sessionKey, limit) as Row[]
    ).map(rowToMessage);
  }
  async getRoute(sessionKey: string): Promise<SessionRoute | undefined> {
    return rowToRoute(
      prepared(this.db, 'SELECT last_channel, last_to, last_account_id FROM sessions WHERE key = ?').get(sessionKey) as
        | Row
        | undefined,
    );
  }
  async listDeliveries(q: { state?: DeliveryState; runId?: string; limit?: number } = {}): Promise<Delivery[]> {
    return this.newest(
      'deliveries',
      [
        ['state', q.state],
        ['run_id', q.runId],
      ],
      q.limit ?? 50,
    ).map(rowToDelivery);
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
}
