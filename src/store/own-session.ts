/**
 * A run's own session. An agent run that brings no session key (and finds no `hooks.defaultSessionKey`) gets a
 * session of its own, `hook:<its run id>`, which no other run is in unless a caller names that key later. SQLite's
 * two session indexes of runs leave such a run out (`WHERE session_key <> 'hook:' || id`): it would be the only entry
 * under its key, and the two entries were 5.5 % of an agent accept's instructions (docs/performance.md, "Why the code
 * is as it is"). So every read of a session's runs takes the indexed runs and the own run apart; the fragments below
 * are the one place that says how. Both halves are exact on PostgreSQL too, whose indexes hold every run.
 */

/** The session key of a run that brings none: the run's own. */
export const ownSessionKey = (runId: string): string => `hook:${runId}`;

/**
 * SQL: the runs of session `key` (an SQL expression) that the session indexes hold, every one but the run whose own
 * session it is. The second term is written exactly as the indexes' `WHERE`, so that SQLite's planner can use them.
 */
export const indexedRunsOf = (alias: string, key: string): string =>
  `${alias}.session_key = ${key} AND ${alias}.session_key <> 'hook:' || ${alias}.id`;

/** SQL: the run whose own session `key` is, if any (by its id: `hook:` is five characters). */
export const ownRunOf = (alias: string, key: string): string =>
  `${alias}.id = substr(${key}, 6) AND ${alias}.session_key = ${key}`;

/** SQL: how many runs session `key` has. */
export const countRunsOf = (key: string): string =>
  `((SELECT COUNT(*) FROM runs r WHERE ${indexedRunsOf('r', key)}) + (SELECT COUNT(*) FROM runs r WHERE ${ownRunOf('r', key)}))`;

/** SQL terms with their `?` parameters, in order. */
export interface SqlTerms {
  sql: string;
  params: unknown[];
}

/** No more terms, for newestRunsOfSession. */
export const NO_MORE_TERMS: SqlTerms = { sql: 'TRUE', params: [] };

/**
 * SQLite: the newest `limit` runs of session `key` that also match `more` (terms with `?` parameters, or
 * NO_MORE_TERMS), newest first. The indexed runs are walked backwards in runs_by_session and cut at `limit` before
 * the own run (one lookup by id) joins them, so a session of a million runs costs what one of twenty does; the
 * `seq IN` list is read in order, so nothing is sorted.
 */
export function newestRunsOfSession(key: string, more: SqlTerms, limit: number): SqlTerms {
  return {
    sql: `SELECT * FROM runs WHERE seq IN (
        SELECT seq FROM (SELECT r.seq FROM runs r WHERE ${indexedRunsOf('r', '?')} AND ${more.sql} ORDER BY r.seq DESC LIMIT ?)
        UNION ALL SELECT r.seq FROM runs r WHERE ${ownRunOf('r', '?')} AND ${more.sql})
      ORDER BY seq DESC LIMIT ?`,
    params: [key, ...more.params, limit, key, key, ...more.params, limit],
  };
}
