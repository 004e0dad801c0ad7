// Fills a stopped hookgate's SQLite store with N received requests and what they leave behind, as real traffic
// leaves it, to measure what a grown store costs (bench/grown.mjs).
//
// The rows are copies of real ones: a hookgate (the bench's config) takes one wake and one agent request and is
// stopped; each table's row is then the template that SQL copies N times with `WITH RECURSIVE`, changing only ids,
// times and states. Per request, in time order over the FILL_DAYS (default 6, inside the default 7-day retention)
// before `end` (default now; the retention soak's steady fill ends later, bench/retention.mjs): every
// FILL_AGENT_EVERY-th (default 2) is an agent request (a run, its summary event, two transcript turns, a delivery),
// the others a wake (one event). Runs (at the default FILL_AGENT_EVERY): 2 % failed, 0.2 % timed
// out, the rest succeeded; deliveries: 1 % dead-lettered, the rest delivered; every event consumed. Received
// records in blocks of FILL_BLOCK (default 16; one block per committed batch), and 1,440 one-minute windows of refusal
// counts. Ids are UUIDv7 of each row's time, so they sort as real ones do.
// With FILL_HEARTBEAT_EVERY=H (the retention soak sets it), every H-th request also leaves a heartbeat of the main
// session: its prompt and reply turns and its delivery, copied from a real heartbeat over H requests' events.
//
// The pages must hold the rows as a live store's do, or a soak on the fill grows or shrinks by the difference until
// the fill is pruned: a fill whose rows went in final and table by table packed 4.6 % fewer pages than the load
// writes for the same rows, and the hour's soak grew by it. What decides it, measured with bench/compare-pages.mjs:
// the rows' sizes to the byte (a run's prompt turn 20 bytes shorter than a live one fits a sixth row in a page that
// holds five), rows of a table in time order (a run's prompt, then its reply), and the states a row passes through
// (a run updated after its neighbours went in splits their page; a live run is finished while it is the last row).
//
// Usage: node bench/fill-store.mjs DIR N   (DIR gets hookgate.json5 and hookgate.db; 10^6 takes about a minute)
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { drain, startHookgate, TOKEN } from './pinned.mjs';

const DAY_MS = 86_400_000;
/** The days a fill spreads its requests over unless told (FILL_DAYS, default 6: inside the 7-day retention). */
export const FILL_DAYS = Number(process.env.FILL_DAYS ?? 6);
const TEMPLATE_HEARTBEATS = 4;
/** A lease owner as hookgate writes it (host:pid:random), for the states a delivery passes through. */
const LEASE_OWNER = 'vm:6961:e2680100';
/** A delivery's states before its last, queued at SQL time `at`: pending, then leased by the outbox for 60 s. */
const deliveryStates = (at) => [
  { state: "'pending'", updated_at: at, delivered_at: 'NULL', attempts: '0', last_error: 'NULL' },
  { lease_owner: `'${LEASE_OWNER}'`, lease_until: `${at} + 60000`, attempts: '1' },
];
export const TAGS = { event: 0x0e1, run: 0x0a1, delivery: 0x0de, heartbeat: 0x0b1 };

/** The SQL expression of a UUIDv7 for time `at` and request `i` (tag tells the tables' ids apart). */
const uuidSql = (at, tag) =>
  `printf('%08x-%04x-7%03x-%04x-%012x', (${at}) >> 16, (${at}) & 65535, ${tag}, 32768 | ((i >> 48) & 16383), i & 281474976710655)`;
/** The same id in JS, for the received records. */
const uuid = (at, tag, i) =>
  `${Math.floor(at / 65536)
    .toString(16)
    .padStart(
      8,
      '0',
    )}-${(at % 65536).toString(16).padStart(4, '0')}-7${tag.toString(16).padStart(3, '0')}-${(0x8000 | Math.floor(i / 2 ** 48)).toString(16)}-${(i % 2 ** 48).toString(16).padStart(12, '0')}`;

/**
 * A hookgate in `dir` takes one wake and one agent request and stops: its rows are the templates. With
 * `heartbeatEvery`, the heartbeat is on and a heartbeat runs over that many requests' events (the fill's mix of wakes
 * and agent summaries, as the bench's load words them): its turns and delivery are the heartbeat's templates.
 */
async function templateStore(dir, { agentEvery, heartbeatEvery }) {
  const sections = heartbeatEvery ? { heartbeat: { every: '30m' } } : {};
  const hg = await startHookgate({ admin: false, serverCpu: null, nodeArgs: [] }, dir, {}, sections);
  try {
    const post = async (path, body) => {
      const res = await fetch(`${hg.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`template ${path}: ${res.status}`);
    };
    const wake = (text, mode = 'next-heartbeat') => post('/hooks/wake', { text, mode });
    const agent = (message) => post('/hooks/agent', { message, name: 'Bench', wakeMode: 'next-heartbeat' });
    const replied = hg.db.prepare(
      "SELECT COUNT(*) AS n FROM deliveries WHERE heartbeat_id IS NOT NULL AND state <> 'pending'",
    );
    await wake('bench event');
    await agent('bench message');
    await drain(hg);
    // Several heartbeats, so that the last one's prompt carries the main session's history as a service's does.
    for (let h = 0; heartbeatEvery && h < TEMPLATE_HEARTBEATS; h++) {
      // Runs first, so that their summaries are in the heartbeat's prompt with the wakes' events.
      const kinds = Array.from({ length: heartbeatEvery }, (_, i) => i % agentEvery === agentEvery - 1);
      for (const [i, isAgent] of kinds.entries()) if (isAgent) await agent(`bench message ${i} @${Date.now()}`);
      await drain(hg);
      for (const [i, isAgent] of kinds.entries()) if (!isAgent) await wake(`bench event ${i}`);
      await wake('bench event', 'now');
      const t0 = performance.now();
      while (replied.get().n <= h) {
        if (performance.now() - t0 > 30_000) throw new Error('template heartbeat: no reply delivered in 30 s');
        await new Promise((res) => setTimeout(res, 50));
      }
    }
  } finally {
    hg.db.close();
    hg.child.kill('SIGTERM');
    await new Promise((res) => (hg.child.exitCode === null ? hg.child.once('exit', res) : res()));
  }
}

/** The received_log blocks of requests [lo, hi): [the newest record's time, the records' JSON], `block` per block. */
export function receivedBlocks(lo, hi, t0, step, agentEvery, block = 16) {
  const blocks = [];
  // `block` may be a fraction (a live store holds 1.5 records per block at 1,000 req/s): blocks then alternate sizes.
  for (let j = 1, b = lo; b < hi; j++) {
    const e = Math.min(hi, Math.max(b + 1, lo + Math.floor(j * block)));
    const records = [];
    for (let i = b; i < e; i++) {
      const at = t0 + i * step;
      const agent = i % agentEvery === agentEvery - 1;
      records.push([
        at,
        'POST',
        agent ? 'agent' : 'wake',
        '127.0.0.1',
        200,
        null,
        agent ? [] : [uuid(at, TAGS.event, i)],
        agent ? [uuid(at, TAGS.run, i)] : [],
        null,
        // As a live record: a duration in µs precision, the token id, and the request's id (16 hex digits).
        (10 + (i % 90)) / 1000,
        null,
        'default',
        ((i * 0x9e3779b1) % 2 ** 52).toString(16).padStart(16, '0'),
      ]);
    }
    blocks.push([records.at(-1)[0], JSON.stringify(records)]);
    b = e;
  }
  return blocks;
}

/** A day of one-minute refusal windows before `t1` (the cap hookgate keeps, refusals.maxStoredWindows): [at, counts JSON]. */
export function refusalWindows(t1) {
  const windows = [];
  for (let w = 1440; w >= 1; w--)
    windows.push([
      t1 - w * 60_000,
      JSON.stringify([
        [401, 'unauthorized', 'wake', `198.51.100.${w % 200}`, 1 + (w % 7)],
        [404, 'not_found', 'other', '203.0.113.9', 2],
      ]),
    ]);
  return windows;
}

/**
 * The copies each request makes, for either driver's SQL: [table, which row is the template, columns replaced
 * (expressions of the request number `i` and its time `at`), which requests make one, the states the row goes
 * through before its last]. `uuidSql(at, tag)`: the SQL of a UUIDv7 for time `at`. The states (SQLite's fill only;
 * PostgreSQL's inserts the final rows): the first is what the row is inserted with, each later one an UPDATE, then an
 * UPDATE to the final columns, as hookgate writes them (a run queued, leased, finished; a delivery pending, leased,
 * delivered; an event pending, then consumed).
 */
export function copies(uuidSql, agentEvery, heartbeatEvery, wakeMode = 'next-heartbeat') {
  const isAgent = `i % ${agentEvery} = ${agentEvery - 1}`;
  const runId = uuidSql('at', TAGS.run);
  // Each run in its own session, `hook:<run id>`, as a run that brings no session key is (src/store/own-session.ts).
  const session = `'hook:' || ${runId}`;
  const state = `CASE WHEN i % 100 = 3 THEN 'failed' WHEN i % 1000 = 7 THEN 'timed_out' ELSE 'succeeded' END`;
  const finished = `i % 100 <> 3 AND i % 1000 <> 7`;
  // The bench's own texts (bench/openloop.mjs), so that rows are the size of the ones its load writes.
  const message = `('bench message ' || i || ' @' || at)`;
  const pendingEvent = [{ consumed_at: 'NULL', heartbeat_id: 'NULL' }];
  const runStates = [
    {
      state: "'queued'",
      updated_at: 'at',
      started_at: 'NULL',
      finished_at: 'NULL',
      attempts: '0',
      node: 'NULL',
      error: 'NULL',
      reply: 'NULL',
      delivery_status: 'NULL',
      fresh: '1',
    },
    {
      state: "'running'",
      updated_at: 'at + 1',
      lease_owner: 't.node',
      lease_until: 'at + 300001',
      node: 't.node',
      fresh: 'NULL',
    },
  ];
  return [
    [
      'system_events',
      "origin = 'wake'",
      {
        id: uuidSql('at', TAGS.event),
        text: `'bench event ' || i`,
        created_at: 'at',
        consumed_at: 'at + 1000',
        heartbeat_id: uuidSql('at + 1000', TAGS.heartbeat),
      },
      `NOT (${isAgent})`,
      pendingEvent,
    ],
    [
      'system_events',
      "origin = 'summary'",
      {
        id: uuidSql('at + 30', TAGS.event),
        text: `'Hook Bench: echo: ' || ${message}`,
        run_id: runId,
        created_at: 'at + 30',
        consumed_at: 'at + 1000',
        heartbeat_id: uuidSql('at + 1000', TAGS.heartbeat),
      },
      isAgent,
      pendingEvent,
    ],
    [
      'runs',
      'TRUE',
      {
        id: runId,
        session_key: session,
        message,
        wake_mode: `'${wakeMode}'`,
        state,
        created_at: 'at',
        updated_at: 'at + 30',
        started_at: 'at + 1',
        finished_at: 'at + 30',
        error: `CASE WHEN ${finished} THEN NULL ELSE 'model: upstream 503' END`,
        reply: `CASE WHEN ${finished} THEN 'echo: ' || ${message} END`,
        delivery_status: `CASE WHEN ${finished} THEN t.delivery_status END`,
      },
      isAgent,
      runStates,
    ],
    [
      'session_messages',
      "role = 'user' AND run_id IS NOT NULL",
      {
        session_key: session,
        run_id: runId,
        content: `replace(t.content, 'bench message', ${message})`,
        created_at: 'at + 29',
      },
      isAgent,
    ],
    [
      'session_messages',
      "role = 'assistant' AND run_id IS NOT NULL",
      { session_key: session, run_id: runId, content: `'echo: ' || ${message}`, created_at: 'at + 30' },
      `${isAgent} AND ${finished}`,
    ],
    [
      'deliveries',
      'run_id IS NOT NULL',
      {
        id: uuidSql('at + 30', TAGS.delivery),
        run_id: runId,
        session_key: session,
        text: `'echo: ' || ${message}`,
        created_at: 'at + 30',
        next_attempt_at: 'at + 30',
        updated_at: 'at + 60',
        state: `CASE WHEN i % 200 = 5 THEN 'dead' ELSE 'delivered' END`,
        delivered_at: `CASE WHEN i % 200 = 5 THEN NULL ELSE at + 60 END`,
        attempts: `CASE WHEN i % 200 = 5 THEN 8 ELSE 1 END`,
        last_error: `CASE WHEN i % 200 = 5 THEN 'log: EACCES' END`,
      },
      `${isAgent} AND ${finished}`,
      deliveryStates('at + 30'),
    ],
    ...(heartbeatEvery ? heartbeatCopies(uuidSql, heartbeatEvery) : []),
  ];
}

/** A heartbeat's rows (the main session's prompt and reply, the reply's delivery) after every `every`-th request. */
function heartbeatCopies(uuidSql, every) {
  const isHeartbeat = `i % ${every} = ${every - 1}`;
  // The template is the last heartbeat of templateStore's (the one whose prompt carries history).
  const last = (table, where) => `seq = (SELECT MAX(seq) FROM ${table} WHERE ${where})`;
  const turn = (role) => last('session_messages', `session_key = 'main' AND run_id IS NULL AND role = '${role}'`);
  // A live heartbeat's prompt and reply vary in length with the events it carries and the session's history (a
  // service's holds more than the template's): measured at the soak's rates, prompts 0.97–1.15× the template's and
  // 1.04× on average, replies 0.90–1.19× and 1.05×. Lengths spread so, as one length would pack the pages that
  // hold the rest of a long row differently than a live store does.
  const varied = (from, width, col = 'content') =>
    `substr(t.${col} || t.${col}, 1, CAST(length(t.${col}) * (${from} + ${width} * ((i * 2654435761) % 1000) / 1000.0) AS INTEGER))`;
  return [
    ['session_messages', turn('user'), { content: varied(0.963, 0.149), created_at: 'at + 1000' }, isHeartbeat],
    ['session_messages', turn('assistant'), { content: varied(0.905, 0.285), created_at: 'at + 1001' }, isHeartbeat],
    [
      'deliveries',
      last('deliveries', 'heartbeat_id IS NOT NULL'),
      {
        id: uuidSql('at + 1001', TAGS.delivery),
        heartbeat_id: uuidSql('at + 1000', TAGS.heartbeat),
        text: varied(0.905, 0.285, 'text'),
        created_at: 'at + 1001',
        next_attempt_at: 'at + 1001',
        updated_at: 'at + 1002',
        delivered_at: 'at + 1002',
      },
      isHeartbeat,
      deliveryStates('at + 1001'),
    ],
  ];
}

/** Requests whose rows are written table after table before the next ones': rows are out of time order within it. */
const ORDER_SPAN = 1000;

/**
 * Writes one table's copies for the requests [:lo, :hi): one INSERT of every copy's rows in time order (each copy:
 * the template's columns, `over` replacing some, the first of its states over those; the rows of a request, a run's
 * prompt turn then its reply, interleave as hookgate appends them, which decides how full a page ends), then an
 * UPDATE per later state and one to the final columns. The copies of a table pass through states of the same
 * columns. Templates are found once, before any copy exists to be mistaken for one. The UPDATEs find the rows by seq
 * (the n-th row in time order is the n-th inserted; its id is checked too): system_events has no index on id, and a
 * join on it would build one per statement.
 */
function copier(db, table, tableCopies, span) {
  const cols = db
    .prepare(`PRAGMA table_info(${table})`)
    .all()
    .map((c) => c.name)
    .filter((c) => c !== 'seq');
  const keys = (copy) => copy.states.map((state) => Object.keys(state).sort().join());
  for (const copy of tableCopies) {
    for (const c of copy.states.flatMap(Object.keys))
      if (!cols.includes(c)) throw new Error(`fill: ${table} has no column ${c}`);
    if (keys(copy).join(';') !== keys(tableCopies[0]).join(';'))
      throw new Error(`fill: ${table}'s copies pass through states of different columns`);
  }
  const branches = tableCopies.map(({ template, over, where }, k) => {
    const { seq } = db.prepare(`SELECT seq FROM ${table} WHERE ${template} ORDER BY seq LIMIT 1`).get();
    return (exprs) =>
      `SELECT ${Object.entries(exprs)
        .map(([c, e]) => `${e} AS ${c}`)
        .join(', ')}, ${over.created_at ?? 'at'} AS at_, ${k} AS k_
       FROM r, (SELECT * FROM ${table} WHERE seq = ${seq}) t WHERE ${where}`;
  });
  const final = (copy, c) => (c in copy.over ? `${copy.over[c]}` : `t.${c}`);
  const union = (exprsOf) => tableCopies.map((copy, k) => branches[k](exprsOf(copy))).join(' UNION ALL ');
  const requests = `WITH RECURSIVE c(i) AS (SELECT CAST(:lo AS INTEGER) UNION ALL SELECT i + 1 FROM c WHERE i + 1 < :hi),
     r AS (SELECT i, CAST(:t0 AS INTEGER) + i * CAST(:step AS INTEGER) AS at FROM c)`;
  const insert = db.prepare(
    `${requests} INSERT INTO ${table} (${cols.join(', ')}) SELECT ${cols.join(', ')} FROM (${union((copy) =>
      Object.fromEntries(cols.map((c) => [c, copy.states[0]?.[c] ?? final(copy, c)])),
    )}) ORDER BY at_, k_`,
  );
  const update = (setOf) => {
    const set = Object.keys(setOf(tableCopies[0]));
    return db.prepare(
      `${requests}
       UPDATE ${table} SET ${set.map((c) => `${c} = x.${c}`).join(', ')}
       FROM (SELECT ROW_NUMBER() OVER (ORDER BY at_, k_) AS n, * FROM (${union((copy) => ({ id_: copy.over.id, ...setOf(copy) }))})) x
       WHERE ${table}.seq = CAST(:after AS INTEGER) + x.n AND ${table}.id = x.id_`,
    );
  };
  const changed = [...new Set(tableCopies[0].states.flatMap(Object.keys))];
  const updates = [
    ...tableCopies[0].states.slice(1).map((_, s) => update((copy) => copy.states[s + 1])),
    ...(changed.length ? [update((copy) => Object.fromEntries(changed.map((c) => [c, final(copy, c)])))] : []),
  ];
  const write = (params) => {
    const { changes, lastInsertRowid } = insert.run(params);
    if (changes === 0) return;
    const after = Number(lastInsertRowid) - changes;
    for (const u of updates)
      if (u.run({ ...params, after }).changes !== changes) throw new Error(`fill: ${table}: a state missed rows`);
  };
  return (params) => {
    if (!updates.length || !span) return write(params);
    for (let lo = params.lo; lo < params.hi; lo += span) write({ ...params, lo, hi: Math.min(params.hi, lo + span) });
  };
}

export async function fillStore(
  dir,
  n,
  {
    days = FILL_DAYS,
    agentEvery = Number(process.env.FILL_AGENT_EVERY ?? 2),
    heartbeatEvery = process.env.FILL_HEARTBEAT_EVERY ? Number(process.env.FILL_HEARTBEAT_EVERY) : undefined,
    block = Number(process.env.FILL_BLOCK ?? 16),
    wakeMode = 'next-heartbeat',
    end = Date.now(),
    log = () => {},
  } = {},
) {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'hookgate.db');
  if (!existsSync(path)) await templateStore(dir, { agentEvery, heartbeatEvery });
  const db = new Database(path);
  const t1 = end;
  const t0 = t1 - days * DAY_MS;
  const step = Math.max(1, Math.floor((days * DAY_MS) / n));
  // Bulk load: no journal, no syncs; WAL again at the end, as hookgate keeps it.
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -262144');
  const byTable = new Map();
  for (const [table, template, over, where, states = []] of copies(uuidSql, agentEvery, heartbeatEvery, wakeMode))
    byTable.set(table, [...(byTable.get(table) ?? []), { template, over, where, states }]);
  // How many requests' rows are in flight (inserted, not yet in their last state) at once: a run and its delivery
  // reach theirs before the next run is far along, so they change one request's rows at a time (a thousand at a time
  // left the runs about 10 % more pages than a live store's; this way, the same); events wait for the heartbeat.
  const inFlight = { runs: agentEvery, deliveries: agentEvery, system_events: heartbeatEvery };
  const copiers = [...byTable].map(([table, tableCopies]) => copier(db, table, tableCopies, inFlight[table]));
  // Template rows go once the copies are made (they would be the oldest rows, with today's times).
  const templateSeqs = {
    system_events: db.prepare('SELECT MAX(seq) AS s FROM system_events').get().s,
    runs: db.prepare('SELECT MAX(seq) AS s FROM runs').get().s,
    session_messages: db.prepare('SELECT MAX(seq) AS s FROM session_messages').get().s,
    deliveries: db.prepare('SELECT MAX(seq) AS s FROM deliveries').get().s,
    received_log: db.prepare('SELECT MAX(seq) AS s FROM received_log').get().s,
  };
  const insBlock = db.prepare('INSERT INTO received_log (at, records) VALUES (?, ?)');
  const chunk = 200_000;
  for (let lo = 0; lo < n; lo += chunk) {
    const hi = Math.min(n, lo + chunk);
    db.transaction(() => {
      // Each table's rows in time order, as hookgate appends them, within ORDER_SPAN requests: retention's walk
      // stops at the first window of rows newer than its cut-off, so a table whose rows went in 200,000 requests at
      // a time (a run's reply turns after all of the chunk's prompts) was walked short, and a reply turn whose run
      // went in that pass was left without its run, never pruned.
      for (let a = lo; a < hi; a += ORDER_SPAN)
        for (const copy of copiers) copy({ lo: a, hi: Math.min(hi, a + ORDER_SPAN), t0, step });
      for (const [at, records] of receivedBlocks(lo, hi, t0, step, agentEvery, block)) insBlock.run(at, records);
    })();
    log(`${hi} of ${n} requests`);
  }
  db.transaction(() => {
    for (const [table, seq] of Object.entries(templateSeqs)) db.prepare(`DELETE FROM ${table} WHERE seq <= ?`).run(seq);
    const insRefusals = db.prepare('INSERT INTO refusal_log (at, window_ms, counts) VALUES (?, 60000, ?)');
    for (const [at, counts] of refusalWindows(Math.min(t1, Date.now()))) insRefusals.run(at, counts);
  })();
  db.pragma('journal_mode = WAL');
  // No ANALYZE: hookgate never runs it, so a real store's planner has no statistics either.
  const counts = Object.fromEntries(
    ['received_log', 'system_events', 'runs', 'session_messages', 'deliveries'].map((t) => [
      t,
      db.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get().n,
    ]),
  );
  db.close();
  return counts;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir, n = '1000000'] = process.argv.slice(2);
  if (!dir) {
    console.error('usage: node bench/fill-store.mjs DIR [N]');
    process.exit(1);
  }
  const t = performance.now();
  const counts = await fillStore(dir, Number(n), { log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(
    `${JSON.stringify({ dir, requests: Number(n), rows: counts, seconds: (performance.now() - t) / 1000 })}\n`,
  );
}
