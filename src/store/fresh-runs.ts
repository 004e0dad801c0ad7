/**
 * SQLite's fresh runs: accepted, and not yet reached by a claim. An accept writes its run with `fresh = 1`, which
 * keeps it out of runs_by_state (`WHERE fresh IS NULL`): one b-tree entry fewer per accepted run, about a fifth of the
 * pages an agent accept writes (docs/performance.md, "An agent request's run row"). The first claim to reach a fresh
 * run leases it or, when an older run of its session is still open, takes it into the index as queued
 * (`fresh = NULL`), and claims reach fresh runs in seq order. Runs are appended, so the fresh runs are always the
 * newest rows of the table: every run after the newest indexed one, and nothing else. So no write may take one run
 * out of the fresh runs but a claim, which takes them in order: a fresh run failed by id (`failRun`) stays fresh, in
 * its new state, until a claim reaches it and takes it in.
 *
 * The runs in a state are therefore that state's indexed runs and its fresh ones, found by seq alone: every read of
 * runs by state goes through these fragments. PostgreSQL's store indexes every run at accept and never writes the
 * column.
 */
import { RUN_STATES } from '../enums.js';

/**
 * SQL: the term that lets the planner use runs_by_state, written exactly as the index's `WHERE` (SQLite takes a
 * partial index only for a query that contains its terms). With a state: that state's indexed runs.
 */
export const INDEXED_RUN = (alias: string): string => `${alias}.fresh IS NULL`;

/**
 * SQL: the seq of the newest indexed run (0 when none): one seek per state at the end of its range of runs_by_state.
 * Every run after it is fresh; no run at or before it is (see the file's comment).
 */
export const NEWEST_INDEXED_SEQ = `COALESCE((SELECT MAX(s) FROM (${RUN_STATES.map(
  (state) =>
    `SELECT * FROM (SELECT i.seq AS s FROM runs i INDEXED BY runs_by_state WHERE i.state = '${state}' AND ${INDEXED_RUN('i')} ORDER BY i.seq DESC LIMIT 1)`,
).join(' UNION ALL ')})), 0)`;

/** SQL: `alias` is a fresh run (a seq range at the end of the table: no index, nothing read before it). */
export const FRESH_RUN = (alias: string): string => `${alias}.seq > ${NEWEST_INDEXED_SEQ}`;

/**
 * SQL: how many runs are in one of `states` (SQL, e.g. `'queued'` or `('queued', 'running')` after `IN`): the indexed
 * ones through runs_by_state, the fresh ones by seq.
 */
export const countRunsIn = (states: string): string =>
  `((SELECT COUNT(*) FROM runs r WHERE r.state IN ${states} AND ${INDEXED_RUN('r')})
    + (SELECT COUNT(*) FROM runs r WHERE ${FRESH_RUN('r')} AND r.state IN ${states}))`;
