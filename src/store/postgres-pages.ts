/** The admin listener's reads on PostgreSQL (pages.ts): the same pages as SQLite's (sqlite-pages.ts), the whole cluster's. */
import type {
  DeliveryPageQuery,
  Page,
  QueueDepths,
  ReceivedPageQuery,
  ReceivedRecord,
  RecentFailures,
  RunPageQuery,
} from './pages.js';
import { pageReceivedLogs, seqFromCursor, seqPage } from './pages-cursor.js';
import type { PgDb } from './postgres-db.js';
import { mayHoldRefused, rowToDelivery, rowToRefusals, rowToRun, type Row } from './record-encoding.js';
import { depthsFromRow, QUEUE_DEPTHS_SQL, receivedBlock } from './sqlite-pages.js';
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
import type { ReceivedTuple, RefusalTuple } from './record-encoding.js';

function where(filters: Array<[string, unknown]>, below: number): { sql: string; params: unknown[] } {
  const present = filters.filter(([, v]) => v !== undefined);
  const conds = [...present.map(([col], i) => `${col} = $${i + 1}`), `seq < $${present.length + 1}`];
  return { sql: conds.join(' AND '), params: [...present.map(([, v]) => v), below] };
}

/** The id of the row `probeWrite` writes and removes in one transaction. */
const PROBE_NODE_ID = 'hookgate:probe';

export class PgPages {
  constructor(private readonly db: PgDb) {}

  async pageRuns(q: RunPageQuery): Promise<Page<Run>> {
    const w = where(
      [
        ['state', q.state],
        ['session_key', q.sessionKey],
      ],
      seqFromCursor('runs', q.cursor),
    );
    const { rows } = await this.db.query(
      `SELECT * FROM runs WHERE ${w.sql} ORDER BY seq DESC LIMIT ${q.limit + 1}`,
      w.params,
    );
    return seqPage(
      'runs',
      rows.map((r) => ({ seq: Number(r.seq), item: rowToRun(r) })),
      q.limit,
    );
  }

  async pageDeliveries(q: DeliveryPageQuery): Promise<Page<Delivery>> {
    const w = where(
      [
        ['state', q.state],
        ['channel', q.channel],
      ],
      seqFromCursor('deliveries', q.cursor),
    );
    const { rows } = await this.db.query(
      `SELECT * FROM deliveries WHERE ${w.sql} ORDER BY seq DESC LIMIT ${q.limit + 1}`,
      w.params,
    );
    return seqPage(
      'deliveries',
      rows.map((r) => ({ seq: Number(r.seq), item: rowToDelivery(r) })),
      q.limit,
    );
  }

  pageReceived(q: ReceivedPageQuery): Promise<Page<ReceivedRecord>> {
    return pageReceivedLogs(
      {
        records: async (atMost, n, refusedOnly) =>
          (
            await this.db.query(
              `SELECT seq, at, ${refusedOnly ? `CASE WHEN ${mayHoldRefused('postgres')} THEN records ELSE '[]' END AS records` : 'records'}
               FROM received_log WHERE seq <= $1 ORDER BY seq DESC LIMIT $2`,
              [atMost, n],
            )
          ).rows.map((r) => receivedBlock(Number(r.seq), r.records as string, Number(r.at))),
        refusals: async (atMost, n) =>
          (
            await this.db.query(
              'SELECT seq, at, window_ms, counts FROM refusal_log WHERE seq <= $1 ORDER BY seq DESC LIMIT $2',
              [atMost, n],
            )
          ).rows.map((r: Row) => ({ seq: Number(r.seq), records: rowToRefusals(r) })),
      },
      q,
    );
  }

  /** What waits: each count on its partial index (runs_queued, runs_running, deliveries_pending, system_events_pending). */
  async queueDepths(): Promise<QueueDepths> {
    const { rows } = await this.db.query(QUEUE_DEPTHS_SQL);
    return depthsFromRow(rows[0]!);
  }

  /** received_log has an index on `at` here: the period's blocks are found directly; those that may hold a refusal parsed. */
  async failuresSince(since: number): Promise<RecentFailures> {
    const { rows } = await this.db.query(
      `SELECT (SELECT COUNT(*) FROM runs WHERE state IN ('failed', 'timed_out') AND finished_at >= $1) AS runs_failed,
         (SELECT COUNT(*) FROM deliveries WHERE state = 'dead' AND updated_at >= $1) AS deliveries_dead,
         (SELECT COALESCE(SUM((c.value->>4)::bigint), 0) FROM refusal_log, jsonb_array_elements(refusal_log.counts::jsonb) c
           WHERE refusal_log.at >= $1) AS refusal_counts,
         (SELECT COUNT(*) FROM received_log, jsonb_array_elements(received_log.records::jsonb) t
           WHERE received_log.at >= $1 AND ${mayHoldRefused('postgres')}
             AND (t.value->>0)::bigint >= $1 AND (t.value->>4)::int >= 400) AS refused_records`,
      [since],
    );
    const r = rows[0]!;
    return {
      runsFailed: Number(r.runs_failed),
      deliveriesDead: Number(r.deliveries_dead),
      refused: Number(r.refusal_counts) + Number(r.refused_records),
    };
  }

  async refusalsStoredUntil(): Promise<number | null> {
    const { rows } = await this.db.query(REFUSALS_STORED_UNTIL_SQL);
    return rows[0] ? Number(rows[0].until) : null;
  }

  /** Counted here, not in SQL, as on SQLite: the same tally from the same records (received_log's `at` is indexed). */
  async breakdownSince(since: number, until: number, bucketMs: number): Promise<StoredBreakdown> {
    const [windows, blocks, channels, runs, storedUntil] = await Promise.all([
      this.db.query('SELECT at, counts FROM refusal_log WHERE at >= $1', [since]),
      this.db.query('SELECT records FROM received_log WHERE at >= $1', [since]),
      this.db.query(CHANNEL_FAILURES_SQL('$1'), [since]),
      this.db.query(HOOK_FAILURES_SQL('$1'), [since]),
      this.refusalsStoredUntil(),
    ]);
    const requests = new RequestTally(since, until, bucketMs);
    for (const w of windows.rows) {
      for (const [status, code, path, , count] of JSON.parse(w.counts as string) as RefusalTuple[])
        requests.add({ at: Number(w.at), path, status, code }, count);
    }
    for (const b of blocks.rows) {
      for (const t of JSON.parse(b.records as string) as ReceivedTuple[])
        requests.add({ at: t[0], path: t[2], status: t[4], code: t[5] });
    }
    return {
      requests,
      channels: channels.rows.map(rowToChannelFailures),
      runs: runs.rows.map(rowToHookFailures),
      refusalsStoredUntil: storedUntil,
    };
  }

  async probeWrite(now: number): Promise<void> {
    await this.db.tx(async (q) => {
      await q(
        `INSERT INTO nodes (id, host, pid, version, url, started_at, last_seen_at) VALUES ($1, '', 0, '', '', $2, $2)
         ON CONFLICT (id) DO UPDATE SET last_seen_at = EXCLUDED.last_seen_at`,
        [PROBE_NODE_ID, now],
      );
      await q('DELETE FROM nodes WHERE id = $1', [PROBE_NODE_ID]);
    });
  }
}
