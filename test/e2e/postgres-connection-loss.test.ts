/**
 * The database's connections cut again and again under keep-alive load (docs/scale-out.md, "What a caller sees"):
 * 8 senders, each on its own keep-alive connection, post wakes while every backend of the node's database is
 * terminated 20 times over 6 s. Every request gets an answer, never a reset: 200 (and then it is stored, once) or
 * 503 `unavailable` with `Retry-After`; none is held longer than the statement bounds allow. And a batch made to wait
 * (a lock held from outside on a table the accept function writes) when the connections are cut: its requests are
 * held only as long as the wait, then answered, and the next requests on the same connections are answered too. A
 * database of its own
 * on the machine's PostgreSQL; skipped without it (failed under HOOKGATE_REQUIRE_SERVICES=1). Run `npm run build`
 * first when running it alone.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import pg from 'pg';
import { after, describe, it } from 'node:test';
import { createTestDatabase, skipWithoutPostgres, type TestDatabase } from '../support/pg-database.js';
import { type Hookgate, startHookgate, TOKEN } from '../support/server.js';

const skip = await skipWithoutPostgres();

/** The longest a request may be held: 5 s to get a connection, then 20 s for its statement (postgres-connect.ts). */
const HOLD_BOUND_MS = 25_000;
const SENDERS = 8;
const ROUNDS = 20;
const ROUND_GAP_MS = 300;
/** How long the lock of the second test holds a batch before its connection is cut. */
const LOCK_WAIT_MS = 4000;

interface Answer {
  status?: number;
  retryAfter?: string | undefined;
  code?: string;
  error?: string;
  ms: number;
}

function post(agent: Agent, url: URL, text: string): Promise<Answer> {
  return new Promise((resolve) => {
    const started = Date.now();
    const body = JSON.stringify({ text, mode: 'next-heartbeat' });
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: '/hooks/wake',
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => {
          let code: string | undefined;
          try {
            code = (JSON.parse(text) as { code?: string }).code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], code, ms: Date.now() - started });
        });
        res.on('error', (err: NodeJS.ErrnoException) =>
          resolve({ error: err.code ?? err.message, ms: Date.now() - started }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve({ error: err.code ?? err.message, ms: Date.now() - started }),
    );
    req.end(body);
  });
}

/** 8 closed-loop senders on keep-alive connections, each answer kept by its text; `stop()` ends them. */
function startSenders(url: URL) {
  const agent = new Agent({ keepAlive: true, maxSockets: SENDERS });
  const answers = new Map<string, Answer>();
  let n = 0;
  let stopped = false;
  const sender = async () => {
    while (!stopped) {
      const text = `cut-${n++}`;
      answers.set(text, await post(agent, url, text));
    }
  };
  const senders = Array.from({ length: SENDERS }, sender);
  const until = async (count: number) => {
    const deadline = Date.now() + 60_000;
    while (answers.size < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  };
  const stop = async () => {
    stopped = true;
    await Promise.all(senders);
    agent.destroy();
  };
  return { answers, until, stop };
}

const terminateAll = (db: TestDatabase, except = 'none') =>
  db.query(
    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name <> $2',
    [db.name, except],
  );

/** Every answer 200 (stored once) or 503 `unavailable` with Retry-After; no reset; none held past the bound. */
async function checkAnswers(
  t: { diagnostic(m: string): void },
  db: TestDatabase,
  hg: Hookgate,
  answers: Map<string, Answer>,
): Promise<Answer[]> {
  const all = [...answers.values()];
  const tally = (pred: (a: Answer) => boolean) => all.filter(pred).length;
  const summary = `${all.length} requests: ${tally((a) => a.status === 200)} × 200, ${tally((a) => a.status === 503)} × 503, errors ${JSON.stringify(all.filter((a) => a.error).map((a) => a.error))}, max hold ${Math.max(...all.map((a) => a.ms))} ms`;
  t.diagnostic(summary);
  assert.deepEqual(
    all.filter((a) => a.error !== undefined).map((a) => a.error),
    [],
    `no request is reset or left unanswered: ${summary}`,
  );
  assert.deepEqual(
    [...new Set(all.map((a) => a.status))].filter((s) => s !== 200 && s !== 503),
    [],
    summary,
  );
  for (const a of all.filter((x) => x.status === 503)) {
    assert.equal(a.code, 'unavailable', summary);
    assert.equal(a.retryAfter, '1', `a 503 says when to retry: ${summary}`);
  }
  assert.ok(
    all.every((a) => a.ms < HOLD_BOUND_MS),
    summary,
  );
  assert.equal(hg.proc.exitCode, null, 'the node is still running');

  // Every 200 is in the database, once; nothing answered 503 is (nothing was accepted).
  const stored = new Map<string, number>();
  for (const r of await db.query<{ text: string }>('SELECT text FROM system_events'))
    stored.set(r.text, (stored.get(r.text) ?? 0) + 1);
  const accepted = [...answers].filter(([, a]) => a.status === 200).map(([t]) => t);
  assert.deepEqual(
    accepted.filter((t) => stored.get(t) !== 1),
    [],
    `each 200 stored exactly once: ${summary}`,
  );
  const refused = [...answers].filter(([, a]) => a.status === 503).map(([t]) => t);
  assert.deepEqual(
    refused.filter((t) => stored.has(t)),
    [],
    `a 503 stored nothing: ${summary}`,
  );
  return all;
}

describe('PostgreSQL connections terminated under keep-alive load', { skip, timeout: 180_000 }, () => {
  let db: TestDatabase | undefined;
  let hg: Hookgate | undefined;
  after(async () => {
    await hg?.cleanup();
    await db?.drop();
  });

  it('every request is answered 200 (stored once) or 503 with Retry-After, never reset, within the hold bound', async (t) => {
    db = await createTestDatabase();
    hg = await startHookgate({ database: db, config: { logging: { level: 'info' } } });
    const load = startSenders(new URL(hg.url));
    try {
      // Load first, so that batches are in flight when the connections are cut.
      await load.until(200);
      for (let round = 0; round < ROUNDS; round++) {
        await terminateAll(db);
        await new Promise((r) => setTimeout(r, ROUND_GAP_MS));
      }
      // And after: the node is back at work on the same connections.
      await load.until(load.answers.size + 200);
    } finally {
      await load.stop();
    }
    await checkAnswers(t, db, hg, load.answers);
  });

  it('a batch waiting on a lock when the connections are cut: held only while it waits, then answered; no reset after', async (t) => {
    await hg?.cleanup();
    await db?.drop();
    db = await createTestDatabase();
    hg = await startHookgate({ database: db, config: { logging: { level: 'info' } } });
    const load = startSenders(new URL(hg.url));
    const locker = new pg.Client({ connectionString: db.url, application_name: 'test-locker' });
    locker.on('error', () => {});
    try {
      await load.until(100);
      await locker.connect();
      // Every accept writes received_log (postgres-schema.ts, hookgate_accept): the batch in flight waits for the lock.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE received_log IN EXCLUSIVE MODE');
      const waitedFrom = load.answers.size;
      await new Promise((r) => setTimeout(r, LOCK_WAIT_MS));
      assert.ok(load.answers.size - waitedFrom <= SENDERS, 'the lock holds the batch');
      await terminateAll(db, 'test-locker');
      await locker.query('ROLLBACK');
      const settled = load.answers.size;
      await load.until(settled + 100);
    } finally {
      await locker.end().catch(() => undefined);
      await load.stop();
    }
    const all = await checkAnswers(t, db, hg, load.answers);
    const held = all.filter((a) => a.ms >= LOCK_WAIT_MS - 500);
    assert.ok(
      held.length > 0 && held.length <= SENDERS,
      `the batch in flight was held while the lock was: ${held.length}`,
    );
    assert.ok(
      held.every((a) => a.ms < LOCK_WAIT_MS + 5000),
      `and answered once its connection was cut: ${held.map((a) => a.ms).join(', ')} ms`,
    );
  });
});
