/** The admin listener's reads on SQLite (pages.ts): cursor pages, queue depths, recent failures. */
import type Database from 'better-sqlite3';
import { DELIVERY_STATES, type DeliveryState, OPEN_RUN_STATES, type OpenRunState, type RunState } from '../enums.js';
import { countRunsIn, FRESH_RUN, INDEXED_RUN } from './fresh-runs.js';
import { newestRunsOfSession, type SqlTerms } from './own-session.js';
import type {
  DeliveryPageQuery,
  Page,
  QueueDepths,
  ReceivedPageQuery,
  ReceivedRecord,
  RecentFailures,
  RunPageQuery,
} from './pages.js';
import { type LogBlock, OUT_OF_ORDER_MS, pageReceivedLogs, seqFromCursor, seqPage } from './pages-cursor.js';
import {
  mayHoldRefused,
  type ReceivedTuple,
  type Row,
  rowToDelivery,
  rowToRefusals,
  rowToRun,
  tupleToReceived,
} from './record-encoding.js';
import type { Delivery, Run } from './types.js';
import {
  CHANNEL_FAILURES_SQL,
  HOOK_FAILURES_SQL,
  REFUSALS_STORED_UNTIL_SQL,
  RequestTally,
  rowToChannelFailures,
  rowToHookFailures,
  type StoredBreakdown,
} from './breakdown.js';
import type { RefusalTuple } from './record-encoding.js';

/** The index a statement must take (breakdown.ts): SQLite's planner, without statistics, would pick a full one. */
const use = (index: string) => `INDEXED BY ${index}`;

/** `WHERE` of the present filters (column = value), plus `seq < ?`. */
function where(filters: Array<[string, unknown]>, below: number): { sql: string; params: unknown[] } {
  const present = filters.filter(([, v]) => v !== undefined);
  return {
    sql: [...present.map(([col]) => `${col} = ?`), 'seq < ?'].join(' AND '),
    params: [...present.map(([, v]) => v), below],
  };
}

/** received_log blocks as log blocks: each block's records newest first. */
export function receivedBlock(seq: number, records: string, at?: number): LogBlock {
  const block: LogBlock = { seq, records: (JSON.parse(records) as ReceivedTuple[]).map(tupleToReceived).reverse() };
  if (at !== undefined) block.at = at;
  return block;
}

export class SqlitePages {
  constructor(private readonly db: Database.Database) {}

  async pageRuns(q: RunPageQuery): Promise<Page<Run>> {
    const below = seqFromCursor('runs', q.cursor);
    const s =
      q.sessionKey !== undefined
        ? newestRunsOfSession(q.sessionKey, where([['state', q.state]], below), q.limit + 1)
        : q.state !== undefined
          ? newestRunsInState(q.state, below, q.limit + 1)
          : { sql: 'SELECT * FROM runs WHERE seq < ? ORDER BY seq DESC LIMIT ?', params: [below, q.limit + 1] };
    const rows = this.db.prepare(s.sql).all(...s.params) as Row[];
    return seqPage(
      'runs',
      rows.map((r) => ({ seq: r.seq as number, item: rowToRun(r) })),
      q.limit,
    );
  }

  async pageDeliveries(q: DeliveryPageQuery): Promise<Page<Delivery>> {
    // The state in the SQL text, not bound: the planner takes a partial index only for a literal it can match.
    if (q.state !== undefined && !DELIVERY_STATES.includes(q.state))
      throw new TypeError(`not a delivery state: ${q.state}`);
    const w = where([['channel', q.channel]], seqFromCursor('deliveries', q.cursor));
    const state = q.state === undefined ? '' : `state = '${q.state}' AND `;
    const rows = this.db
      .prepare(
        `SELECT * FROM deliveries ${DELIVERY_PAGE_INDEX[q.state ?? 'any']} WHERE ${state}${w.sql} ORDER BY seq DESC LIMIT ?`,
      )
      .all(...w.params, q.limit + 1) as Row[];
    return seqPage(
      'deliveries',
      rows.map((r) => ({ seq: r.seq as number, item: rowToDelivery(r) })),
      q.limit,
    );
  }

  pageReceived(q: ReceivedPageQuery): Promise<Page<ReceivedRecord>> {
    return pageReceivedLogs(
      {
        records: async (atMost, n, refusedOnly) =>
          (
            this.db
              .prepare(
                `SELECT seq, at, ${refusedOnly ? `CASE WHEN ${mayHoldRefused('sqlite')} THEN records ELSE '[]' END AS records` : 'records'}
                 FROM received_log WHERE seq <= ? ORDER BY seq DESC LIMIT ?`,
              )
              .all(atMost, n) as Row[]
          ).map((r) => receivedBlock(r.seq as number, r.records as string, r.at as number)),
        refusals: async (atMost, n) =>
          (
            this.db
              .prepare('SELECT seq, at, window_ms, counts FROM refusal_log WHERE seq <= ? ORDER BY seq DESC LIMIT ?')
              .all(atMost, n) as Row[]
          ).map((r) => ({ seq: r.seq as number, records: rowToRefusals(r) })),
      },
      q,
    );
  }

  /** One statement; each count walks an index as small as its queue (runs_by_state's prefix, a partial one) or the fresh runs. */
  async queueDepths(): Promise<QueueDepths> {
    return depthsFromRow(this.db.prepare(SQLITE_QUEUE_DEPTHS_SQL).get() as Row);
  }

  /** Failed runs and dead deliveries through their partial indexes by time; received blocks walked back to `since`. */
  async failuresSince(since: number): Promise<RecentFailures> {
    const row = this.db
      .prepare(
        `SELECT (SELECT COUNT(*) FROM runs ${use('runs_failed_at')}
             WHERE state IN ('failed', 'timed_out') AND finished_at >= @since) AS runs_failed,
           (SELECT COUNT(*) FROM deliveries ${use('deliveries_dead_at')}
             WHERE state = 'dead' AND updated_at >= @since) AS deliveries_dead,
           (SELECT COALESCE(SUM(json_extract(c.value, '$[4]')), 0) FROM refusal_log, json_each(refusal_log.counts) c
             WHERE refusal_log.at >= @since) AS refusal_counts`,
      )
      .get({ since }) as Row;
    // Blocks are appended in about time order: walk back from the newest, past the period's start by the margin for
    // batches committed out of order, so the walk ends with the period whatever the store holds before it. Only the
    // blocks that may hold a refusal are read out and parsed.
    let refused = row.refusal_counts as number;
    for (const b of this.db
      .prepare(
        `SELECT at, CASE WHEN ${mayHoldRefused('sqlite')} THEN records END AS records FROM received_log ORDER BY seq DESC`,
      )
      .iterate() as IterableIterator<Row>) {
      if ((b.at as number) < since - OUT_OF_ORDER_MS) break;
      if (b.records === null) continue;
      for (const t of JSON.parse(b.records as string) as ReceivedTuple[]) if (t[0] >= since && t[4] >= 400) refused++;
    }
    return { runsFailed: row.runs_failed as number, deliveriesDead: row.deliveries_dead as number, refused };
  }

  async refusalsStoredUntil(): Promise<number | null> {
    const row = this.db.prepare(REFUSALS_STORED_UNTIL_SQL).get() as Row | undefined;
    return row ? Number(row.until) : null;
  }

  async breakdownSince(since: number, until: number, bucketMs: number): Promise<StoredBreakdown> {
    const requests = new RequestTally(since, until, bucketMs);
    for (const w of this.db
      .prepare('SELECT at, counts FROM refusal_log WHERE at >= ?')
      .iterate(since) as IterableIterator<Row>) {
      for (const [status, code, path, , count] of JSON.parse(w.counts as string) as RefusalTuple[])
        requests.add({ at: w.at as number, path, status, code }, count);
    }
    // Blocks are appended in about time order (each stamped with its newest record): walk back from the newest, past
    // the period's start by a margin for batches committed out of order (RequestTally skips records outside it).
    for (const b of this.db
      .prepare('SELECT at, records FROM received_log ORDER BY seq DESC')
      .iterate() as IterableIterator<Row>) {
      if ((b.at as number) < since - OUT_OF_ORDER_MS) break;
      for (const t of JSON.parse(b.records as string) as ReceivedTuple[])
        requests.add({ at: t[0], path: t[2], status: t[4], code: t[5] });
    }
    return {
      requests,
      channels: (this.db.prepare(CHANNEL_FAILURES_SQL('@since', use)).all({ since }) as Row[]).map(
        rowToChannelFailures,
      ),
      runs: (this.db.prepare(HOOK_FAILURES_SQL('?', use)).all(since) as Row[]).map(rowToHookFailures),
      refusalsStoredUntil: await this.refusalsStoredUntil(),
    };
  }
}

/**
 * The newest `limit` runs in `state` before seq `below`, newest first: the fresh runs in that state (fresh-runs.ts;
 * newer than any indexed run, and as many as the claims have not reached) and the state's range of runs_by_state
 * walked backwards. Each part is cut at `limit` before they join; the `seq IN` list is read in order, so nothing is
 * sorted.
 */
function newestRunsInState(state: RunState, below: number, limit: number): SqlTerms {
  return {
    sql: `SELECT * FROM runs WHERE seq IN (
        SELECT seq FROM (SELECT r.seq FROM runs r WHERE ${FRESH_RUN('r')} AND r.state = ? AND r.seq < ?
          ORDER BY r.seq DESC LIMIT ?)
        UNION ALL SELECT seq FROM (SELECT r.seq FROM runs r WHERE r.state = ? AND ${INDEXED_RUN('r')} AND r.seq < ?
          ORDER BY r.seq DESC LIMIT ?))
      ORDER BY seq DESC LIMIT ?`,
    params: [state, below, limit, state, below, limit, limit],
  };
}

/** What waits, never the history (pages.ts QueueDepths), given the SQL that counts the runs in an open state. */
const queueDepthsSql = (countRuns: (state: OpenRunState) => string): string =>
  `SELECT ${OPEN_RUN_STATES.map((s) => `${countRuns(s)} AS ${s}`).join(', ')},
  (SELECT COUNT(*) FROM deliveries WHERE state = 'pending') AS outbox_pending,
  (SELECT COUNT(*) FROM system_events WHERE consumed_at IS NULL) AS events_pending`;

/** PostgreSQL's: every run is in runs_by_state from its accept. */
export const QUEUE_DEPTHS_SQL = queueDepthsSql((s) => `(SELECT COUNT(*) FROM runs WHERE state = '${s}')`);

/** SQLite's: each state's indexed runs and its fresh ones (fresh-runs.ts). */
const SQLITE_QUEUE_DEPTHS_SQL = queueDepthsSql((s) => countRunsIn(`('${s}')`));

/**
 * The index each delivery page walks, by state filter: dead (rare) through its partial index by seq; delivered (most
 * rows) along seq itself (`NOT INDEXED`); pending (the queue) through its partial index, sorted (the planner would
 * walk every delivery back from the newest, looking for the few pending); no filter as the planner chooses.
 */
const DELIVERY_PAGE_INDEX: Record<DeliveryState | 'any', string> = {
  any: '',
  pending: 'INDEXED BY deliveries_pending_by_route',
  delivered: 'NOT INDEXED',
  dead: 'INDEXED BY deliveries_dead',
};

export function depthsFromRow(row: Row): QueueDepths {
  const runs = Object.fromEntries(OPEN_RUN_STATES.map((s) => [s, Number(row[s])])) as QueueDepths['runs'];
  return {
    runs,
    outboxPending: Number(row.outbox_pending),
    systemEventsPending: Number(row.events_pending),
  };
}
