/** The reads of the PostgreSQL driver (the same queries as SQLite's, in PostgreSQL's dialect). */
import type { PgDb } from './postgres-db.js';
import { PG } from './postgres-statements.js';
import {
  listSessionsSql,
  type ReceivedTuple,
  rowToDelivery,
  rowToEvent,
  rowToMessage,
  rowToRefusals,
  rowToRoute,
  rowToRun,
  rowToSessionSummary,
  type Row,
  tupleToReceived,
} from './record-encoding.js';
import type {
  Delivery,
  DeliveryState,
  ListRunsQuery,
  ReceivedHook,
  Run,
  SessionDetail,
  SessionMessage,
  SessionRoute,
  SessionSummary,
  SystemEvent,
} from './types.js';

/** Rows read per page when walking a log newest first until enough records were found. */
const PAGE = 64;

function filtered(base: string, filters: Array<[string, unknown]>, tail: string): { sql: string; params: unknown[] } {
  const present = filters.filter(([, v]) => v !== undefined && v !== null && v !== '');
  const where = present.map(([col], i) => `${col} = $${i + 1}`);
  return {
    sql: `${base} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ${tail.replace('$LIMIT', `$${present.length + 1}`)}`,
    params: present.map(([, v]) => v),
  };
}

export class PgReads {
  constructor(private readonly db: PgDb) {}

  async getRun(id: string): Promise<Run | undefined> {
    const { rows } = await this.db.query(PG.getRun, [id]);
    return rows[0] && rowToRun(rows[0]);
  }

  async listRuns(q: ListRunsQuery = {}): Promise<Run[]> {
    const { sql, params } = filtered(
      'SELECT * FROM runs',
      [
        ['state', q.state],
        ['session_key', q.sessionKey],
      ],
      'ORDER BY seq DESC LIMIT $LIMIT',
    );
    return (await this.db.query(sql, [...params, q.limit ?? 50])).rows.map(rowToRun);
  }

  async listSessions(limit = 50): Promise<SessionSummary[]> {
    const { rows } = await this.db.query(listSessionsSql('$1'), [limit]);
    return rows.map(rowToSessionSummary);
  }

  async getSession(key: string): Promise<SessionDetail | undefined> {
    const summary = await this.sessionSummary(key);
    if (!summary) return undefined;
    const [pending, recentEvents, recentRuns, transcript] = await Promise.all([
      this.db.query('SELECT * FROM system_events WHERE session_key = $1 AND consumed_at IS NULL ORDER BY seq', [key]),
      this.db.query('SELECT * FROM system_events WHERE session_key = $1 ORDER BY seq DESC LIMIT 20', [key]),
      this.db.query('SELECT * FROM runs WHERE session_key = $1 ORDER BY seq DESC LIMIT 20', [key]),
      this.db.query(
        'SELECT * FROM (SELECT * FROM session_messages WHERE session_key = $1 ORDER BY seq DESC LIMIT 40) t ORDER BY seq',
        [key],
      ),
    ]);
    return {
      ...summary,
      transcript: transcript.rows.map(rowToMessage),
      pending: pending.rows.map(rowToEvent),
      recentEvents: recentEvents.rows.map(rowToEvent),
      recentRuns: recentRuns.rows.map(rowToRun),
    };
  }

  private async sessionSummary(key: string): Promise<SessionSummary | undefined> {
    const { rows } = await this.db.query(
      `WITH activity AS (
         SELECT agent_id, created_at FROM runs WHERE session_key = $1
         UNION ALL SELECT agent_id, created_at FROM system_events WHERE session_key = $1
         UNION ALL SELECT agent_id, updated_at FROM sessions WHERE key = $1)
       SELECT $1::text AS key, MIN(agent_id) AS agent_id, MAX(created_at) AS last_at,
         (SELECT COUNT(*) FROM system_events e WHERE e.session_key = $1 AND e.consumed_at IS NULL) AS pending,
         (SELECT COUNT(*) FROM runs r WHERE r.session_key = $1) AS runs,
         (SELECT last_channel FROM sessions WHERE key = $1) AS last_channel,
         (SELECT last_to FROM sessions WHERE key = $1) AS last_to,
         (SELECT last_account_id FROM sessions WHERE key = $1) AS last_account_id
       FROM activity HAVING COUNT(*) > 0`,
      [key],
    );
    return rows[0] && rowToSessionSummary(rows[0]);
  }

  async listReceived(limit = 50, filter: { rejected?: boolean } = {}): Promise<ReceivedHook[]> {
    if (limit <= 0) return [];
    const records: ReceivedHook[] = [];
    // Blocks newest first, each block's records newest first; stops as soon as `limit` records are found.
    await this.pages('SELECT seq, records FROM received_log', (row) => {
      const block = JSON.parse(row.records as string) as ReceivedTuple[];
      for (let i = block.length - 1; i >= 0 && records.length < limit; i--) {
        const rec = tupleToReceived(block[i]!);
        if (!filter.rejected || rec.status >= 400) records.push(rec);
      }
      return records.length < limit;
    });
    const counts: ReceivedHook[] = [];
    await this.pages('SELECT seq, at, window_ms, counts FROM refusal_log', (row) => {
      counts.push(...rowToRefusals(row));
      return counts.length < limit;
    });
    if (counts.length === 0) return records;
    // Both lists are newest first; a window's counts sort by the window's start (stable: largest count first).
    return [...records, ...counts].sort((a, b) => b.at - a.at).slice(0, limit);
  }

  /** Walk `select` (which must return `seq`) newest first, a page at a time, while `each` answers true. */
  private async pages(select: string, each: (row: Row) => boolean): Promise<void> {
    let before = Number.MAX_SAFE_INTEGER;
    for (;;) {
      const { rows } = await this.db.query(`${select} WHERE seq < $1 ORDER BY seq DESC LIMIT ${PAGE}`, [before]);
      for (const row of rows) if (!each(row)) return;
      if (rows.length < PAGE) return;
      before = rows[rows.length - 1]!.seq as number;
    }
  }

  async pendingEvents(sessionKey: string, limit = 1000): Promise<SystemEvent[]> {
    const { rows } = await this.db.query(PG.pendingEvents, [sessionKey, limit]);
    return rows.map(rowToEvent);
  }

  async sessionsWithPendingEvents(limit = 1000): Promise<string[]> {
    const { rows } = await this.db.query<{ session_key: string }>(PG.sessionsWithPendingEvents, [limit]);
    return rows.map((r) => r.session_key);
  }

  async sessionMessages(agentId: string, sessionKey: string, limit: number): Promise<SessionMessage[]> {
    const { rows } = await this.db.query(PG.sessionMessages, [agentId, sessionKey, limit]);
    return rows.map(rowToMessage);
  }

  async getRoute(sessionKey: string): Promise<SessionRoute | undefined> {
    const { rows } = await this.db.query(PG.getRoute, [sessionKey]);
    return rowToRoute(rows[0]);
  }

  async listDeliveries(q: { state?: DeliveryState; runId?: string; limit?: number } = {}): Promise<Delivery[]> {
    const { sql, params } = filtered(
      'SELECT * FROM deliveries',
      [
        ['state', q.state],
        ['run_id', q.runId],
      ],
      'ORDER BY seq DESC LIMIT $LIMIT',
    );
    return (await this.db.query(sql, [...params, q.limit ?? 50])).rows.map(rowToDelivery);
  }

  async getDelivery(id: string): Promise<Delivery | undefined> {
    const { rows } = await this.db.query('SELECT * FROM deliveries WHERE id = $1', [id]);
    return rows[0] && rowToDelivery(rows[0]);
  }
}
