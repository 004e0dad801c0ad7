/**
 * The last hour broken down (`GET /api/v1/breakdown`, the dashboard's chart and tables): requests per time bucket,
 * accepted and refused by code; requests per path; refusals per code; delivery failures per channel; failed runs per
 * hook. Both drivers fold their stored records into a `RequestTally`; the admin listener adds the refusals its
 * memory holds that no stored window counts yet.
 */

/** One request, or `n` alike (a window of refusal counts). */
export interface TalliedRequest {
  at: number;
  path: string;
  status: number;
  code: string | null;
}

export interface BucketCounts {
  /** Start of the bucket (epoch ms). */
  at: number;
  accepted: number;
  /** Refusals by code (`http_<status>` for one without a code). */
  refused: Record<string, number>;
}

export interface PathCounts {
  path: string;
  accepted: number;
  refused: number;
  /** Refusals by code. */
  codes: Record<string, number>;
}

export interface CodeCounts {
  status: number;
  code: string;
  count: number;
}

/** The key a refusal is counted under. */
export const refusalCode = (status: number, code: string | null): string => code ?? `http_${status}`;

/** Paths listed at most; the rest fold into `other` (a stranger picks paths). */
export const MAX_PATHS = 50;

/** Requests of a period, counted per bucket, per path and per refusal code. */
export class RequestTally {
  private readonly buckets: BucketCounts[];
  private readonly paths = new Map<string, PathCounts>();
  private readonly codes = new Map<string, CodeCounts>();

  constructor(
    readonly since: number,
    readonly until: number,
    readonly bucketMs: number,
  ) {
    const n = Math.max(1, Math.ceil((until - since) / bucketMs));
    this.buckets = Array.from({ length: n }, (_, i) => ({ at: since + i * bucketMs, accepted: 0, refused: {} }));
  }

  /** A tally that crossed a thread as its fields (structured clone keeps the data and the Maps, not the class). */
  static revive(fields: RequestTally): RequestTally {
    return Object.assign(Object.create(RequestTally.prototype) as RequestTally, fields);
  }

  /** Count `n` requests like `r`; outside the period, nothing. */
  add(r: TalliedRequest, n = 1): void {
    if (r.at < this.since || r.at >= this.until || n <= 0) return;
    const bucket = this.buckets[Math.floor((r.at - this.since) / this.bucketMs)]!;
    let path = this.paths.get(r.path);
    if (!path) {
      const key = this.paths.size < MAX_PATHS ? r.path : 'other';
      path = this.paths.get(key) ?? { path: key, accepted: 0, refused: 0, codes: {} };
      this.paths.set(key, path);
    }
    if (r.status < 400) {
      bucket.accepted += n;
      path.accepted += n;
      return;
    }
    const code = refusalCode(r.status, r.code);
    bucket.refused[code] = (bucket.refused[code] ?? 0) + n;
    path.refused += n;
    path.codes[code] = (path.codes[code] ?? 0) + n;
    const c = this.codes.get(code) ?? { status: r.status, code, count: 0 };
    c.count += n;
    this.codes.set(code, c);
  }

  /** Oldest bucket first; paths with the most refusals first (then the busiest); codes most frequent first. */
  result(): { buckets: BucketCounts[]; byPath: PathCounts[]; byCode: CodeCounts[] } {
    return {
      buckets: this.buckets,
      byPath: [...this.paths.values()].sort(
        (a, b) => b.refused - a.refused || b.accepted - a.accepted || a.path.localeCompare(b.path),
      ),
      byCode: [...this.codes.values()].sort((a, b) => b.count - a.count || a.code.localeCompare(b.code)),
    };
  }
}

/**
 * Delivery failures of the period per channel, in the delivery states' words (`pending`, `sent`, `failed`): `failed`,
 * dead-lettered; `pendingRetry`, still pending after a failed attempt (it waits for its next one).
 */
export interface ChannelFailures {
  channel: string;
  failed: number;
  pendingRetry: number;
}

/** Failed and timed-out runs of the period, per hook (the admin listener names them: runtime's `runLabel`). */
export interface HookFailures {
  name: string;
  mappingId: string | null;
  hookPath: string;
  failed: number;
}

export interface StoredBreakdown {
  requests: RequestTally;
  channels: ChannelFailures[];
  runs: HookFailures[];
  /** The end of the newest stored window of refusal counts (null: none stored); later refusals are not stored yet. */
  refusalsStoredUntil: number | null;
}

/**
 * The SQL both drivers run for the channel and hook tables (`p` is the driver's placeholder for `since`; `use` names
 * the index a part must take: SQLite's `INDEXED BY`, as its planner, without statistics, prefers the equality on
 * `state` of a full index to the time range of the partial one). Each part seeks an index as small as what it
 * counts: the dead deliveries by time (deliveries_dead_at), the pending ones (the outbox's queue), the failed runs by
 * time (runs_failed_at); none walks the history.
 */
export const CHANNEL_FAILURES_SQL = (p: string, use: (index: string) => string = () => '') =>
  `SELECT channel, SUM(failed) AS failed, SUM(pending_retry) AS pending_retry FROM (
     SELECT channel, 1 AS failed, 0 AS pending_retry FROM deliveries ${use('deliveries_dead_at')}
       WHERE state = 'dead' AND updated_at >= ${p}
     UNION ALL
     SELECT channel, 0, 1 FROM deliveries WHERE state = 'pending' AND attempts > 0 AND updated_at >= ${p}
   ) AS f GROUP BY channel ORDER BY failed DESC, pending_retry DESC, channel`;

export const HOOK_FAILURES_SQL = (p: string, use: (index: string) => string = () => '') =>
  `SELECT name, mapping_id, hook_path, COUNT(*) AS failed FROM runs ${use('runs_failed_at')}
   WHERE state IN ('failed', 'timed_out') AND finished_at >= ${p}
   GROUP BY name, mapping_id, hook_path ORDER BY failed DESC, name LIMIT 50`;

export const REFUSALS_STORED_UNTIL_SQL = 'SELECT at + window_ms AS until FROM refusal_log ORDER BY seq DESC LIMIT 1';

type Row = Record<string, unknown>;
export const rowToChannelFailures = (r: Row): ChannelFailures => ({
  channel: String(r.channel),
  failed: Number(r.failed),
  pendingRetry: Number(r.pending_retry),
});
export const rowToHookFailures = (r: Row): HookFailures => ({
  name: String(r.name ?? ''),
  mappingId: (r.mapping_id as string | null) ?? null,
  hookPath: String(r.hook_path ?? ''),
  failed: Number(r.failed),
});
