/**
 * SQLite schema, applied in order by `PRAGMA user_version`. Append new steps; never edit an applied one (the first
 * steps were last edited before any release). Times are epoch milliseconds. Booleans are 0/1.
 * `seq` columns are plain rowids, not AUTOINCREMENT: that would update sqlite_sequence on every insert, and rows are
 * never deleted from the end of the tables that order by seq.
 */
export const SQLITE_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE system_events (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    session_key  TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    text         TEXT NOT NULL,
    origin       TEXT NOT NULL,
    run_id       TEXT,
    created_at   INTEGER NOT NULL,
    consumed_at  INTEGER,
    heartbeat_id TEXT
  );
  CREATE INDEX system_events_pending ON system_events (session_key, consumed_at, seq);

  CREATE TABLE runs (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    state           TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    session_key     TEXT NOT NULL,
    session_mode    TEXT NOT NULL,
    name            TEXT NOT NULL,
    message         TEXT NOT NULL,
    wake_mode       TEXT NOT NULL,
    deliver         INTEGER NOT NULL,
    channel         TEXT NOT NULL,
    recipient       TEXT,
    model           TEXT,
    thinking        TEXT,
    timeout_seconds REAL NOT NULL,
    allow_unsafe    INTEGER NOT NULL,
    content_source  TEXT NOT NULL,
    hook_path       TEXT NOT NULL,
    mapping_id      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    started_at      INTEGER,
    finished_at     INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 0,
    lease_owner     TEXT,
    lease_until     INTEGER,
    error           TEXT,
    reply           TEXT
  );
  CREATE INDEX runs_by_state ON runs (state, seq);
  CREATE INDEX runs_by_session ON runs (session_key, seq);

  CREATE TABLE idempotency (
    scope       TEXT NOT NULL,
    key_hash    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status      INTEGER NOT NULL,
    body        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (scope, key_hash)
  ) WITHOUT ROWID;
  CREATE INDEX idempotency_expiry ON idempotency (expires_at);

  CREATE TABLE received_hooks (
    seq         INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    method      TEXT NOT NULL,
    path        TEXT NOT NULL,
    client_ip   TEXT NOT NULL,
    status      INTEGER NOT NULL,
    code        TEXT,
    event_ids   TEXT,
    run_ids     TEXT,
    mapping_id  TEXT,
    duration_ms REAL NOT NULL
  );
  CREATE INDEX received_hooks_at ON received_hooks (at);

  CREATE TABLE sessions (
    key          TEXT PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    last_channel TEXT,
    last_to      TEXT,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
  );
  `,
  `
  -- What each session sent and got back: the transcript of persistent sessions, and the record of every turn.
  CREATE TABLE session_messages (
    seq         INTEGER PRIMARY KEY,
    session_key TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    run_id      TEXT,
    created_at  INTEGER NOT NULL
  );
  CREATE INDEX session_messages_by_key ON session_messages (agent_id, session_key, seq);

  -- The outbox: one row per reply to deliver, written in the transaction that finishes the run or heartbeat.
  CREATE TABLE deliveries (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    run_id          TEXT,
    heartbeat_id    TEXT,
    session_key     TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    hook_name       TEXT,
    channel         TEXT NOT NULL,
    recipient       TEXT NOT NULL,
    text            TEXT NOT NULL,
    explicit_route  INTEGER NOT NULL,
    state           TEXT NOT NULL,
    chunks_sent     INTEGER NOT NULL DEFAULT 0,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    delivered_at    INTEGER
  );
  CREATE INDEX deliveries_due ON deliveries (state, next_attempt_at, seq);
  CREATE INDEX deliveries_by_route ON deliveries (channel, recipient, seq);
  CREATE INDEX deliveries_by_run ON deliveries (run_id);

  -- Where a finished run's reply went: delivered through the outbox, suppressed (HEARTBEAT_OK, deliver:false),
  -- or nowhere (no route).
  ALTER TABLE runs ADD COLUMN delivery_status TEXT;
  ALTER TABLE runs ADD COLUMN next_attempt_at INTEGER;
  `,
  `
  -- Claims look only at unfinished work: partial indexes stay small however long the history grows.
  CREATE INDEX runs_queued ON runs (seq) WHERE state = 'queued';
  CREATE INDEX runs_running ON runs (lease_until) WHERE state = 'running';
  CREATE INDEX runs_open_by_session ON runs (session_key, seq) WHERE state IN ('queued', 'running');
  CREATE INDEX deliveries_pending ON deliveries (next_attempt_at, seq) WHERE state = 'pending';
  CREATE INDEX deliveries_pending_by_route ON deliveries (channel, recipient, seq) WHERE state = 'pending';
  `,
  `
  -- Pending events only: the index stays as small as the queue, whatever the history.
  DROP INDEX system_events_pending;
  CREATE INDEX system_events_pending ON system_events (session_key, seq) WHERE consumed_at IS NULL;
  `,
  `
  -- Received records are pruned by seq (they are appended in time order): no index on every insert.
  DROP INDEX received_hooks_at;
  `,
  `
  -- Events are found by session (pending index) and consumed by session and id, never looked up by id alone: the
  -- unique index on id cost ~3 µs per accepted wake. UUIDv7 ids do not collide. SQLite cannot drop an inline
  -- UNIQUE constraint, so the table is rebuilt.
  CREATE TABLE system_events_v6 (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL,
    session_key  TEXT NOT NULL,
    agent_id     TEXT NOT NULL,
    text         TEXT NOT NULL,
    origin       TEXT NOT NULL,
    run_id       TEXT,
    created_at   INTEGER NOT NULL,
    consumed_at  INTEGER,
    heartbeat_id TEXT
  );
  INSERT INTO system_events_v6 (seq, id, session_key, agent_id, text, origin, run_id, created_at, consumed_at, heartbeat_id)
    SELECT seq, id, session_key, agent_id, text, origin, run_id, created_at, consumed_at, heartbeat_id FROM system_events;
  DROP TABLE system_events;
  ALTER TABLE system_events_v6 RENAME TO system_events;
  CREATE INDEX system_events_pending ON system_events (session_key, seq) WHERE consumed_at IS NULL;
  `,
  `
  -- Received records in blocks: one row per committed batch, holding that batch's records as a JSON array of
  -- tuples (see record-encoding.ts). One insert per batch instead of one per request (~3 µs per request). \`at\` is the
  -- newest record's time: retention prunes whole blocks by it.
  CREATE TABLE received_log (
    seq     INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    records TEXT NOT NULL
  );
  INSERT INTO received_log (at, records)
    SELECT at, json_array(json_array(at, method, path, client_ip, status, code, json(COALESCE(event_ids, '[]')),
                                     json(COALESCE(run_ids, '[]')), mapping_id, duration_ms))
    FROM received_hooks ORDER BY seq;
  DROP TABLE received_hooks;
  `,
  `
  -- Named channel accounts (channels.<platform>.accounts.<id>): the account a run asked for, the one its delivery
  -- goes through, and the one the session's last route used. NULL: the platform's default account.
  ALTER TABLE runs ADD COLUMN account_id TEXT;
  ALTER TABLE deliveries ADD COLUMN account_id TEXT;
  ALTER TABLE sessions ADD COLUMN last_account_id TEXT;
  `,
  `
  -- Runs retried after a transient model failure: how often, and since when (the retry window runs from the first
  -- such failure). next_attempt_at (migration 2) holds the time of the next try.
  ALTER TABLE runs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE runs ADD COLUMN retrying_since INTEGER;
  `,
  `
  -- Refusals are counted, not recorded one by one (ingress/refusals.ts): one row per window of counts, a JSON array
  -- of [status, code, pathClass, addressBucket, count]; at most hooks.refusals.maxStoredWindows rows are kept.
  CREATE TABLE refusal_log (
    seq       INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    window_ms INTEGER NOT NULL,
    counts    TEXT NOT NULL
  );
  -- Who stored each idempotency key (the client's address bucket), so each sender's keys can be capped, oldest first.
  ALTER TABLE idempotency ADD COLUMN sender TEXT NOT NULL DEFAULT '';
  CREATE INDEX idempotency_by_sender ON idempotency (sender, created_at);
  `,
  `
  -- The node registry (hookgate nodes): one row per running service process, refreshed while it runs, removed when it
  -- stops. On SQLite there is one node at a time; a row left by a kill -9 shows as gone once its last_seen_at is old.
  CREATE TABLE nodes (
    id           TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    url          TEXT NOT NULL,
    started_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  `
  -- The Gmail push chain (docs/gmail.md). gmail_accounts: per mailbox, the history id fetched up to (Gmail's uint64
  -- as decimal text), the watch's expiry, counters and the last error. gmail_pushes: every accepted Pub/Sub push, a
  -- durable queue (fetched_at NULL: still to fetch) whose unique message_id makes a redelivered push a duplicate.
  CREATE TABLE gmail_accounts (
    account          TEXT PRIMARY KEY,
    history_id       TEXT,
    watch_expiration INTEGER,
    watch_renewed_at INTEGER,
    last_push_at     INTEGER,
    messages_fetched INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    last_error_at    INTEGER,
    updated_at       INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE gmail_pushes (
    seq         INTEGER PRIMARY KEY,
    message_id  TEXT NOT NULL UNIQUE,
    account     TEXT NOT NULL,
    history_id  TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    fetched_at  INTEGER
  );
  CREATE INDEX gmail_pushes_pending ON gmail_pushes (account, fetched_at, seq);
  `,
  `
  -- Provenance of system events: untrusted = 1 when the text derives from a sender's payload (a mapped wake
  -- rendered from it, the summary of a run that read it); the heartbeat prompt shows such text inside the
  -- external-content wrapper, with \`source\` (the hook's name) outside it.
  ALTER TABLE system_events ADD COLUMN untrusted INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE system_events ADD COLUMN source TEXT;
  -- The audit trail (hookgate audit): config reloads, token rotations, admin actions, lockouts. detail is JSON with
  -- secrets masked; actor says who (an address bucket, "admin", "config"); node the process that wrote it.
  CREATE TABLE audit_log (
    seq    INTEGER PRIMARY KEY,
    id     TEXT NOT NULL UNIQUE,
    at     INTEGER NOT NULL,
    kind   TEXT NOT NULL,
    actor  TEXT NOT NULL,
    node   TEXT,
    detail TEXT NOT NULL
  );
  CREATE INDEX audit_log_at ON audit_log (at);
  `,
  `
  -- The node that claimed a run last (hookgate runs list, runs show): kept after the run ends, unlike lease_owner.
  ALTER TABLE runs ADD COLUMN node TEXT;
  `,
  `
  -- runs_by_state (state, seq) finds the queued runs in order and the running ones (at most the workers' concurrency)
  -- as well: the two partial indexes were two more b-trees written on every run's insert, lease, renewal and finish.
  -- No query reads deliveries_pending (the outbox walks deliveries_pending_by_route, counts use deliveries_due).
  DROP INDEX runs_queued;
  DROP INDEX runs_running;
  DROP INDEX deliveries_pending;
  `,
  `
  -- The admin reads of failures (the last hour's counts, the breakdown, the list of dead deliveries) seek these
  -- instead of walking every failed run or dead delivery ever stored. Each holds only rows that failed: a run or
  -- delivery enters it when it fails, never at accept, and the common path (queued, sent, succeeded) never writes it.
  CREATE INDEX runs_failed_at ON runs (finished_at) WHERE state IN ('failed', 'timed_out');
  CREATE INDEX deliveries_dead_at ON deliveries (updated_at) WHERE state = 'dead';
  CREATE INDEX deliveries_dead ON deliveries (seq) WHERE state = 'dead';
  `,
  `
  -- A run in its own session (hook:<its id>, a run that brought no key) is the only run under that key: the session
  -- indexes leave it out, two b-tree entries fewer per accept (own-session.ts reads such a run by its id). The term
  -- is written as the queries write it: SQLite takes a partial index only for a WHERE that contains its terms.
  DROP INDEX runs_by_session;
  DROP INDEX runs_open_by_session;
  CREATE INDEX runs_by_session ON runs (session_key, seq) WHERE session_key <> 'hook:' || id;
  CREATE INDEX runs_open_by_session ON runs (session_key, seq)
    WHERE state IN ('queued', 'running') AND session_key <> 'hook:' || id;
  `,
  `
  -- A session's events outside the main session (the wakes that name a session), so that its view does not read every
  -- event ever kept: the main session's events (every summary, most wakes) stay out, and so cost an accept nothing.
  CREATE INDEX system_events_by_session ON system_events (session_key, seq) WHERE session_key <> 'main';
  `,
  `
  -- A run enters runs_by_state when a claim first reaches it, not at its accept (fresh-runs.ts): an accepted run is
  -- written fresh (fresh = 1) and stays out of the index, one b-tree entry fewer per accept; the first claim to reach
  -- it leases it or, when an older run of its session is still open, takes it into the index as queued. Fresh runs
  -- are always the newest rows (runs are appended; claims take them in seq order), so they are found by seq alone.
  -- Every run already stored has fresh NULL: indexed as before.
  ALTER TABLE runs ADD COLUMN fresh INTEGER;
  DROP INDEX runs_by_state;
  CREATE INDEX runs_by_state ON runs (state, seq) WHERE fresh IS NULL;
  `,
  `
  -- Every read of deliveries by state is of the pending ones (the outbox's claims, the queue's depth, a pending page),
  -- which deliveries_pending_by_route holds; delivered pages walk seq, dead ones their partial indexes. deliveries_due
  -- held every delivery ever kept: a b-tree written at each delivery's insert and twice when it was delivered.
  DROP INDEX deliveries_due;
  `,
];
