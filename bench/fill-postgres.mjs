// bench/fill-store.mjs for PostgreSQL: creates database NAME (on the server of BENCH_PG_URL / HOOKGATE_TEST_PG_URL,
// default postgres://postgres@127.0.0.1:5432/test), lets a hookgate on it take one wake and one agent request, then
// copies those rows N times with generate_series, as fill-store.mjs does on SQLite (same mix, ids and times), and
// VACUUM ANALYZEs (autovacuum would have, on a store that grew by itself).
//
// Usage: node bench/fill-postgres.mjs NAME N   (prints the database's URL and row counts; drop it when done:
// `psql -c 'DROP DATABASE "NAME"'`)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { copies, FILL_DAYS, receivedBlocks, refusalWindows } from './fill-store.mjs';
import { startHookgate, TOKEN } from './pinned.mjs';

const DAY_MS = 86_400_000;
const adminUrl =
  process.env.BENCH_PG_URL || process.env.HOOKGATE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';

const hex = (expr, width) => `lpad(to_hex(${expr}), ${width}, '0')`;
const uuidSql = (at, tag) =>
  `${hex(`(${at}) >> 16`, 8)} || '-' || ${hex(`(${at}) & 65535`, 4)} || '-7' || ${hex(String(tag), 3)} || '-' || to_hex(32768 | ((i >> 48) & 16383)) || '-' || ${hex('i & 281474976710655', 12)}`;

async function templateRows(url) {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-fill-pg-'));
  const hg = await startHookgate({ admin: false, serverCpu: null, nodeArgs: [] }, dir, { driver: 'postgres', url });
  try {
    for (const [path, body] of [
      ['/hooks/wake', { text: 'bench event', mode: 'next-heartbeat' }],
      ['/hooks/agent', { message: 'bench message', name: 'Bench', wakeMode: 'next-heartbeat' }],
    ]) {
      const res = await fetch(`${hg.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`template ${path}: ${res.status}`);
    }
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      for (let i = 0; i < 100; i++) {
        if ((await c.query(`SELECT 1 FROM deliveries WHERE state = 'delivered'`)).rowCount) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the template run was not delivered in 10 s');
    } finally {
      await c.end();
    }
  } finally {
    hg.child.kill('SIGTERM');
    await new Promise((res) => (hg.child.exitCode === null ? hg.child.once('exit', res) : res()));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The URL of database `name` on the bench's PostgreSQL server. */
export function pgUrl(name) {
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates database `name`; resolves with its URL. */
export async function createDatabase(name) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return pgUrl(name);
}

export async function dropDatabases(names) {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (const name of names) await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export async function fillPostgres(
  name,
  n,
  { days = FILL_DAYS, agentEvery = Number(process.env.FILL_AGENT_EVERY ?? 2), log = () => {} } = {},
) {
  const url = await createDatabase(name);
  await templateRows(url);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('SET synchronous_commit = off');
    const t1 = Date.now();
    const t0 = t1 - Math.round(days * DAY_MS);
    const step = Math.max(1, Math.floor((days * DAY_MS) / n));
    const tables = ['system_events', 'runs', 'session_messages', 'deliveries', 'received_log'];
    const templateSeqs = {};
    for (const t of tables) templateSeqs[t] = (await c.query(`SELECT COALESCE(MAX(seq), 0) AS s FROM ${t}`)).rows[0].s;
    const statements = [];
    for (const [table, template, over, where] of copies(uuidSql, agentEvery)) {
      const cols = (
        await c.query(
          'SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND table_schema = current_schema() ORDER BY ordinal_position',
          [table],
        )
      ).rows
        .map((r) => r.column_name)
        .filter((col) => col !== 'seq');
      const exprs = cols.map((col) => (col in over ? over[col] : `t.${col}`));
      statements.push(
        `INSERT INTO ${table} (${cols.join(', ')}) SELECT ${exprs.join(', ')}
         FROM (SELECT i, $3::bigint + i * $4::bigint AS at FROM generate_series($1::bigint, $2::bigint - 1) AS g(i) WHERE ${where}) r,
              (SELECT * FROM ${table} WHERE ${template} LIMIT 1) t`,
      );
    }
    const chunk = 200_000;
    for (let lo = 0; lo < n; lo += chunk) {
      const hi = Math.min(n, lo + chunk);
      await c.query('BEGIN');
      for (const sql of statements) await c.query(sql, [lo, hi, t0, step]);
      const blocks = receivedBlocks(lo, hi, t0, step, agentEvery);
      for (let b = 0; b < blocks.length; b += 2000) {
        const part = blocks.slice(b, b + 2000);
        await c.query('INSERT INTO received_log (at, records) SELECT * FROM unnest($1::bigint[], $2::text[])', [
          part.map((x) => x[0]),
          part.map((x) => x[1]),
        ]);
      }
      await c.query('COMMIT');
      log(`${hi} of ${n} requests`);
    }
    await c.query('BEGIN');
    for (const [table, seq] of Object.entries(templateSeqs))
      await c.query(`DELETE FROM ${table} WHERE seq <= $1`, [seq]);
    const windows = refusalWindows(t1);
    await c.query(
      'INSERT INTO refusal_log (at, window_ms, counts) SELECT a, 60000, c FROM unnest($1::bigint[], $2::text[]) AS w(a, c)',
      [windows.map((w) => w[0]), windows.map((w) => w[1])],
    );
    await c.query('COMMIT');
    await c.query('VACUUM ANALYZE');
    const counts = {};
    for (const t of tables) counts[t] = Number((await c.query(`SELECT COUNT(*) AS n FROM ${t}`)).rows[0].n);
    return { url, rows: counts };
  } finally {
    await c.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [name, n = '1000000'] = process.argv.slice(2);
  if (!name) {
    console.error('usage: node bench/fill-postgres.mjs DATABASE_NAME [N]');
    process.exit(1);
  }
  const t = performance.now();
  const r = await fillPostgres(name, Number(n), { log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${JSON.stringify({ ...r, requests: Number(n), seconds: (performance.now() - t) / 1000 })}\n`);
}
