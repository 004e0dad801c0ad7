#!/usr/bin/env node
// `node bench/pg-explain.mjs` (after a build): the plans of the PostgreSQL store's hot statements as the backlog grows.
// A scratch database gets hookgate's schema from the built store (openPostgresStore migrates it), then, for each size
// (PG_EXPLAIN_SIZES, default 0,20000,1000000 rows in runs, deliveries and system_events), is filled with
// `INSERT … SELECT generate_series` in a realistic mix (oldest rows finished, the newest queued: 85 % done, 3 % of
// those failed/dead, 2 % running or leased with an expired lease, the rest queued or pending; the deliveries over
// PG_EXPLAIN_ROUTES recipients, default 1: every reply to the same channel and recipient, as in the bench and in many
// set-ups), vacuumed and analysed. Then PG_EXPLAIN_FRESH queued runs (default 6,000: a burst of agent requests) are
// added after that ANALYZE, which the plans do not know of (autovacuum is off on the scratch tables, so the statistics
// stay as they were), and the run claims are explained again.
//
// The statements are not copied here: each store method below is called on the real store while the pg client
// records what it is sent (and answers with an empty result), so a renamed or rewritten statement is picked up.
// Each recorded statement then runs as `EXPLAIN (ANALYZE, BUFFERS)` with the same parameters, in a transaction that
// is rolled back, so every plan sees the same data. The plans are custom plans (parameters known), which is what an
// unnamed statement always gets (a named one may switch to a generic plan after five executions). BEGIN/COMMIT and
// bare `pg_notify` calls are listed, not explained. A call of one of hookgate's functions (hookgate_accept_batch,
// hookgate_claim_runs) runs once more with auto_explain (loaded in the session: superuser) to show the plans of the
// statements inside it. The database is dropped at the end. Env: PG_EXPLAIN_URL (admin URL; default
// HOOKGATE_TEST_PG_URL, else the machine's server, database test).
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const root = new URL('..', import.meta.url);
const { openPostgresStore } = await import(new URL('dist/store/postgres.js', root).href);
const adminUrl =
  process.env.PG_EXPLAIN_URL || process.env.HOOKGATE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const sizes = (process.env.PG_EXPLAIN_SIZES ?? '0,20000,1000000').split(',').map(Number);
const routes = Math.max(1, Number(process.env.PG_EXPLAIN_ROUTES ?? 1));
const NOW = 1_800_000_000_000;
const OWNER = 'node-explain';
const DEAD = 'node-dead'; // holds the expired leases
const LEASE_MS = 60_000;
const fresh = Math.max(0, Number(process.env.PG_EXPLAIN_FRESH ?? 6000));

// ——— recording what the store sends ———
let recording;
const realQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (config, values, callback) {
  if (!recording) return realQuery.call(this, config, values, callback);
  let cb = callback;
  let params = values;
  if (typeof values === 'function') {
    cb = values;
    params = undefined;
  }
  const text = typeof config === 'string' ? config : config.text;
  recording.push({ text, params: typeof config === 'string' ? params : (config.values ?? params) });
  const result = { rows: [], rowCount: 1, command: 'SELECT', fields: [] };
  if (typeof cb === 'function') {
    process.nextTick(cb, null, result);
    return undefined;
  }
  return Promise.resolve(result);
};

/** The statements `fn` makes the store send (its result is ignored: it saw empty answers). */
async function record(fn) {
  recording = [];
  try {
    await fn();
  } catch {
    /* an empty answer where a row was expected */
  }
  const out = recording;
  recording = undefined;
  return out;
}

// ——— the data ———
const mix = (n) => `
  WITH g AS (SELECT i, i::float8 / GREATEST(${n}, 1) AS f FROM generate_series(1, ${n}) AS i)`;

async function fill(c, n) {
  await c.query(
    'TRUNCATE runs, deliveries, system_events, session_messages, received_log, idempotency, sessions RESTART IDENTITY',
  );
  if (n > 0) {
    // Sessions: one in ten runs on one of 100 shared sessions, the others each on their own (fresh hook: keys).
    await c.query(`${mix(n)}
      INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel, recipient,
        timeout_seconds, allow_unsafe, content_source, hook_path, created_at, updated_at, started_at, finished_at, attempts,
        lease_owner, lease_until, reply, delivery_status)
      SELECT 'run-' || i,
        CASE WHEN f < 0.85 THEN (CASE WHEN i % 33 = 0 THEN 'failed' ELSE 'succeeded' END) WHEN f < 0.87 THEN 'running' ELSE 'queued' END,
        'main', CASE WHEN i % 10 = 0 THEN 'hook:shared-' || (i % 100) ELSE 'hook:' || i END, 'isolated', 'Bench', 'pipeline ' || i,
        'next-heartbeat', 1, 'last', NULL, 120, 0, 'webhook', 'agent', ${NOW} - (${n} - i) * 10, ${NOW} - (${n} - i) * 10,
        CASE WHEN f < 0.87 THEN ${NOW} - (${n} - i) * 10 END, CASE WHEN f < 0.85 THEN ${NOW} - (${n} - i) * 10 + 5 END,
        CASE WHEN f < 0.87 THEN 1 ELSE 0 END,
        CASE WHEN f >= 0.85 AND f < 0.87 THEN '${DEAD}' END, CASE WHEN f >= 0.85 AND f < 0.87 THEN ${NOW} - 1000 END,
        CASE WHEN f < 0.85 THEN 'reply ' || i END, CASE WHEN f < 0.85 THEN 'log:sent' END
      FROM g`);
    await c.query(`${mix(n)}
      INSERT INTO deliveries (id, run_id, session_key, agent_id, hook_name, channel, recipient, text, explicit_route, state, attempts,
        next_attempt_at, lease_owner, lease_until, created_at, updated_at, delivered_at)
      SELECT 'dlv-' || i, 'run-' || i, 'hook:' || i, 'main', 'Bench', 'log', 'r' || (i % ${routes}), 'reply ' || i, 0,
        CASE WHEN f < 0.85 THEN (CASE WHEN i % 33 = 0 THEN 'dead' ELSE 'delivered' END) ELSE 'pending' END,
        CASE WHEN f < 0.87 THEN 1 ELSE 0 END, ${NOW} - (${n} - i) * 10,
        CASE WHEN f >= 0.85 AND f < 0.87 THEN '${DEAD}' END, CASE WHEN f >= 0.85 AND f < 0.87 THEN ${NOW} - 1000 END,
        ${NOW} - (${n} - i) * 10, ${NOW} - (${n} - i) * 10, CASE WHEN f < 0.85 THEN ${NOW} - (${n} - i) * 10 + 5 END
      FROM g`);
    await c.query(`${mix(n)}
      INSERT INTO system_events (id, session_key, agent_id, text, origin, created_at, consumed_at)
      SELECT 'ev-' || i, CASE WHEN i % 10 = 0 THEN 'hook:shared-' || (i % 100) ELSE 'agent:main:main' END, 'main', 'event ' || i, 'wake',
        ${NOW} - (${n} - i) * 10, CASE WHEN f < 0.999 THEN ${NOW} - (${n} - i) * 10 + 5 END
      FROM g`);
  }
  await c.query('VACUUM ANALYZE runs');
  await c.query('VACUUM ANALYZE deliveries');
  await c.query('VACUUM ANALYZE system_events');
}

// ——— what the runtime does on its hot path ———
function run(id, sessionKey) {
  return {
    id,
    agentId: 'main',
    sessionKey,
    sessionMode: 'isolated',
    name: 'Bench',
    message: 'explain',
    wakeMode: 'next-heartbeat',
    deliver: true,
    channel: 'last',
    to: null,
    accountId: null,
    model: null,
    thinking: null,
    timeoutSeconds: 120,
    allowUnsafeExternalContent: false,
    contentSource: 'webhook',
    hookPath: 'agent',
    mappingId: null,
    createdAt: NOW,
  };
}
const received = (path, runIds) => ({
  at: NOW,
  method: 'POST',
  path,
  clientIp: '127.0.0.1',
  status: 202,
  code: null,
  eventIds: [],
  runIds,
  mappingId: null,
  durationMs: 1,
});

/**
 * The run claim, each of its two statements: the store looks for expired leases at most once a sweep period by the
 * claims' clock, so the first call, a period after the last one, sweeps, and the second, at the same time, does not.
 */
let claimClock = NOW;
function runClaims(store) {
  claimClock += 1000;
  const at = claimClock;
  return [
    ['run claim with the expired-lease sweep (16)', () => store.claimRuns(OWNER, at, LEASE_MS, 16)],
    ['run claim (16)', () => store.claimRuns(OWNER, at, LEASE_MS, 16)],
  ];
}

/** Queued runs the statistics do not know of, after the queued runs of the mix (the same sessions' shape). */
async function addFresh(c, n) {
  await c.query(`
    INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel,
      timeout_seconds, allow_unsafe, content_source, hook_path, created_at, updated_at)
    SELECT 'fresh-' || i, 'queued', 'main', CASE WHEN i % 10 = 0 THEN 'hook:shared-' || (i % 100) ELSE 'hook:fresh-' || i END,
      'isolated', 'Bench', 'burst ' || i, 'next-heartbeat', 1, 'last', 120, 0, 'webhook', 'agent', ${NOW}, ${NOW}
    FROM generate_series(1, ${fresh}) AS i`);
  return `\n=== ${n.toLocaleString('en')} rows, then ${fresh.toLocaleString('en')} queued runs added after the last ANALYZE ===`;
}

/** [label, call]: each call makes the store send one operation's statements. */
function hotPath(store, n) {
  const heldRun = n > 0 ? `run-${Math.ceil(n * 0.86)}` : 'run-none';
  const heldDelivery = n > 0 ? `dlv-${Math.ceil(n * 0.86)}` : 'dlv-none';
  const newId = `run-explain-${randomBytes(4).toString('hex')}`;
  return [
    [
      'accept (agent: one run)',
      () =>
        store.accept({
          events: [],
          runs: [run(newId, `hook:${newId}`)],
          answerSpec: { kind: 'agent' },
          received: received('/hooks/agent', [newId]),
        }),
    ],
    [
      'accept (wake: one event)',
      () =>
        store.accept({
          events: [
            {
              id: 'ev-explain',
              sessionKey: 'agent:main:main',
              agentId: 'main',
              text: 'wake',
              origin: 'wake',
              createdAt: NOW,
            },
          ],
          runs: [],
          answerSpec: { kind: 'wake' },
          received: received('/hooks/wake', []),
        }),
    ],
    ...runClaims(store),
    [
      'lease renewal (16 runs)',
      () =>
        store.renewRunLeases(
          DEAD,
          Array.from({ length: 16 }, (_, i) => `run-${Math.ceil(n * 0.85) + 1 + i}`),
          NOW + LEASE_MS,
        ),
    ],
    [
      'run completion',
      () =>
        store.completeRun({
          runId: heldRun,
          owner: DEAD,
          state: 'succeeded',
          finishedAt: NOW,
          error: null,
          reply: 'reply',
          deliveryStatus: 'log:pending',
          events: [
            {
              id: 'ev-summary',
              sessionKey: 'agent:main:main',
              agentId: 'main',
              text: 'summary',
              origin: 'summary',
              runId: heldRun,
              createdAt: NOW,
            },
          ],
          deliveries: [
            {
              id: 'dlv-explain',
              runId: heldRun,
              heartbeatId: null,
              sessionKey: 'hook:x',
              agentId: 'main',
              hookName: 'Bench',
              channel: 'log',
              to: 'r1',
              accountId: null,
              text: 'reply',
              explicitRoute: false,
              createdAt: NOW,
            },
          ],
          messages: [
            { sessionKey: 'hook:x', agentId: 'main', role: 'user', content: 'explain', runId: heldRun, createdAt: NOW },
            {
              sessionKey: 'hook:x',
              agentId: 'main',
              role: 'assistant',
              content: 'reply',
              runId: heldRun,
              createdAt: NOW,
            },
          ],
        }),
    ],
    ['delivery claim (16)', () => store.claimDeliveries(OWNER, NOW, LEASE_MS, 16)],
    ['delivery completion (sent)', () => store.finishDelivery(heldDelivery, DEAD, { kind: 'delivered', at: NOW }, NOW)],
    ['lease sweep at start-up (recoverLeases)', () => store.recoverLeases(NOW)],
  ];
}

const FUNCTION_CALL = /\bhookgate_\w+\(/i;
const SKIP = /^\s*(BEGIN|COMMIT|ROLLBACK)\s*$|^\s*SELECT pg_notify\(\$1, \$2\)\s*$/i;
const oneLine = (s) => s.replace(/\s+/g, ' ').trim();

async function explainAll(c, calls, title) {
  const out = [title];
  for (const [label, call] of calls) {
    const sent = await record(call);
    out.push(
      `\n--- ${label}: ${sent.length} statement${sent.length === 1 ? '' : 's'} sent${sent.length ? '' : ' (nothing: no statement on this path)'}`,
    );
    for (const { text, params } of sent) {
      if (SKIP.test(text)) {
        out.push(`(not explained) ${oneLine(text)}`);
        continue;
      }
      out.push(`\n${oneLine(text).slice(0, 300)}`);
      await c.query('BEGIN');
      try {
        const { rows } = await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params);
        out.push(...rows.map((r) => r['QUERY PLAN']));
        if (FUNCTION_CALL.test(text) && nested) {
          // The statements inside the function: auto_explain's plans of each, sent back as notices.
          await c.query('ROLLBACK');
          await c.query('BEGIN');
          const notices = [];
          const onNotice = (m) => notices.push(m.message);
          c.on('notice', onNotice);
          try {
            await c.query(`SET LOCAL auto_explain.log_min_duration = 0`);
            await c.query(text, params);
          } finally {
            c.off('notice', onNotice);
          }
          for (const m of notices) out.push(`  (inside) ${m.replace(/\n/g, '\n  ')}`);
        }
      } catch (err) {
        out.push(`EXPLAIN failed: ${err.message}`);
      } finally {
        await c.query('ROLLBACK');
      }
    }
  }
  return out.join('\n');
}

const dbName = `hg_explain_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`CREATE DATABASE "${dbName}"`);
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;
let store;
let nested = false; // auto_explain loaded: the plans inside hookgate's functions are shown too
const c = new pg.Client({ connectionString: url.toString() });
try {
  store = await openPostgresStore({ url: url.toString(), poolSize: 2 });
  await c.connect();
  // The statistics are those of the last ANALYZE of `fill`, whatever the rows added after it.
  for (const t of ['runs', 'deliveries', 'system_events'])
    await c.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
  nested = await c
    .query(
      `LOAD 'auto_explain'; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on;
       SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = 'notice'; SET auto_explain.log_min_duration = -1`,
    )
    .then(
      () => true,
      (err) => (
        process.stdout.write(
          `(auto_explain unavailable, the statements inside functions are not shown: ${err.message})\n`,
        ),
        false
      ),
    );
  const { rows } = await c.query('SHOW server_version');
  process.stdout.write(
    `hookgate pg-explain: PostgreSQL ${rows[0].server_version}, database ${dbName}, ${new Date().toISOString()}\n`,
  );
  for (const n of sizes) {
    const t0 = performance.now();
    await fill(c, n);
    process.stdout.write(
      `\n(filled ${n.toLocaleString('en')} rows per table in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
    );
    const title = `\n=== ${n.toLocaleString('en')} rows in runs, deliveries and system_events ===`;
    process.stdout.write(`${await explainAll(c, hotPath(store, n), title)}\n`);
    if (fresh > 0) process.stdout.write(`${await explainAll(c, runClaims(store), await addFresh(c, n))}\n`);
  }
} finally {
  await c.end().catch(() => {});
  await store?.close();
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await admin.end();
}
