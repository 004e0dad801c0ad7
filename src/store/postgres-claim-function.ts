/**
 * hookgate_claim_runs, the PostgreSQL run claim (PgWrites.claimRuns calls it through the named statement
 * PG.claimRuns): $1 now, $2 owner, $3 lease until, $4 limit, $5 $6 $7 the walk (below), $8 whether to look for expired
 * leases first. One row per run leased (`run`, the whole row; `was`, its state before), and one more, or one alone,
 * whose run is null and which says how far the walk went (`walked`, `walked_to`).
 *
 * A function, with `enable_seqscan = off` for its statements, so that no plan of the claim reads `runs` whole. A
 * named statement (as a function's statement) keeps the generic plan it makes after five executions until the table's
 * next ANALYZE; one made while `runs` held a page or two seq-scanned it at each step of the walk (and sorted), so a
 * burst of queued runs made every claim read the whole table many times over (docs/scale-out.md, "Run claims").
 * Without seq scans the cheapest plan at any size is the intended one: index seeks and tuple ids. Kept plans rather
 * than `plan_cache_mode = force_custom_plan`: planning at each call cost more than the claim itself.
 *
 * Migrations (postgres-schema.ts) run this text; changing it: edit it here and append a step that runs it again, and
 * keep the signature (CREATE OR REPLACE would otherwise add an overload).
 */

/**
 * The oldest open run of its session. A scalar subquery, not NOT EXISTS: the planner turns NOT EXISTS into an anti
 * join, and a plan made while the table was small (no statistics yet: a fresh database) joined every candidate to a
 * scan of every open run (12 ms per claim with 2,000 queued); a scalar subquery stays one index probe per candidate.
 */
const OLDEST_OF_SESSION = `r.seq = (SELECT min(p.seq) FROM runs p WHERE p.session_key = r.session_key AND p.state IN ('queued', 'running'))`;
/**
 * The queue walked one `runs_queued` entry at a time (a seek past the last one: `ORDER BY seq LIMIT 1`), so no plan can
 * read the whole queue and sort it, as one made with statistics older than a burst of queued runs did (docs/scale-out.md,
 * "Run claims"). Each entry that is due and its session's oldest open run is locked as it is passed (SKIP LOCKED:
 * one another claim holds is passed over); the walk stops once `target` are locked, or after $7 entries: $6 from the
 * queue's head, the rest from just after $5 (where an earlier walk stopped), so that a session's many queued runs
 * waiting behind its running one (each passed, none claimable) cost each claim $7 entries at most and do not hide the
 * runs queued behind them (PgWrites.claimRuns moves $5). The start row (seq 0, before every run) is not a run.
 */
const WALK_QUEUE = (target: string) => `
  walk AS (
    SELECT 0::bigint AS seq, 0 AS n, 0 AS found, NULL::tid AS tid
    UNION ALL
    SELECT x.seq, w.n + 1, w.found + (l.tid IS NOT NULL)::int, l.tid FROM walk w
    CROSS JOIN LATERAL (
      SELECT r.seq, r.ctid AS tid, (r.next_attempt_at IS NULL OR r.next_attempt_at <= $1) AND ${OLDEST_OF_SESSION} AS ok
      FROM runs r WHERE r.state = 'queued' AND r.seq > CASE WHEN w.n = $6 THEN GREATEST(w.seq, $5) ELSE w.seq END
      ORDER BY r.seq LIMIT 1) x
    LEFT JOIN LATERAL (SELECT l.ctid AS tid FROM runs l WHERE l.ctid = x.tid AND x.ok FOR UPDATE OF l SKIP LOCKED) l ON true
    WHERE w.found < ${target} AND w.n < $7)`;
/**
 * The locked rows leased by their tuple ids (a TID scan), not by a join on id: a plan cannot know how many rows the
 * walk gives (`LIMIT $4` bounds its estimate), and one made with a small table's statistics joined by scanning every
 * run (measured: 6 ms a claim at 20,000 runs). A row whose locked version is newer than the statement's snapshot is
 * left unclaimed this time. One row more than those leased, or one alone, says how far the walk went (`walked`
 * entries, up to seq `walked_to`); its run is null.
 */
const LEASE_RUNS = `
  up AS (
    UPDATE runs SET state = 'running', lease_owner = $2, lease_until = $3, attempts = attempts + 1, started_at = $1,
      updated_at = $1, node = $2
    FROM (SELECT * FROM cand LIMIT $4) c WHERE runs.ctid = c.tid RETURNING runs AS run, c.was)
  SELECT up.run, up.was, s.walked, s.walked_to FROM (SELECT max(n) AS walked, max(seq) AS walked_to FROM walk) s LEFT JOIN up ON true`;

/** $1 now, $2 owner, $3 lease until, $4 limit, $5 $6 $7 the walk (above): queued runs only (the usual claim). */
const CLAIM_RUNS = `
  WITH RECURSIVE ${WALK_QUEUE('$4')},
  cand AS (SELECT tid, 'queued' AS was FROM walk WHERE tid IS NOT NULL),
  ${LEASE_RUNS}`;

/**
 * The same, expired leases first (a dead node's runs), those that ran out first: `runs_running` in its order, so the
 * claim stops at the limit instead of sorting every expired lease by seq. Run at most once per sweep period
 * (postgres-writes.ts).
 */
const CLAIM_RUNS_AND_EXPIRED = `
  WITH RECURSIVE expired AS (
    SELECT r.ctid AS tid, r.state AS was FROM runs r
    WHERE r.state = 'running' AND r.lease_until < $1 AND ${OLDEST_OF_SESSION}
    ORDER BY r.lease_until LIMIT $4
    FOR UPDATE OF r SKIP LOCKED),
  ${WALK_QUEUE('$4 - (SELECT count(*) FROM expired)')},
  cand AS (SELECT tid, was FROM expired UNION ALL SELECT tid, 'queued' FROM walk WHERE tid IS NOT NULL),
  ${LEASE_RUNS}`;

export const PG_CLAIM_FUNCTION = `
CREATE OR REPLACE FUNCTION hookgate_claim_runs(bigint, text, bigint, integer, bigint, integer, integer, boolean)
RETURNS TABLE (run runs, was text, walked integer, walked_to bigint) LANGUAGE plpgsql
SET search_path FROM CURRENT SET enable_seqscan = off AS $fn$
#variable_conflict use_column
BEGIN
  IF $8 THEN
    RETURN QUERY ${CLAIM_RUNS_AND_EXPIRED};
  ELSE
    RETURN QUERY ${CLAIM_RUNS};
  END IF;
END
$fn$`;
