/**
 * The database's connections cut again and again under keep-alive load (docs/scale-out.md, "What a caller sees"):
 * 8 senders, each on its own keep-alive connection, post wakes while every backend of the node's database is
 * terminated 20 times over 6 s. Every request gets an answer, never a reset: 200 (and then it is stored, once) or
 * 503 `unavailable` with `Retry-After`; none is held longer than the statement bounds allow. A database of its own
 * on the machine's PostgreSQL; skipped without it (failed under HOOKGATE_REQUIRE_SERVICES=1). Run `npm run build`
 * first when running it alone.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, describe, it } from 'node:test';
import { createTestDatabase, skipWithoutPostgres, type TestDatabase } from '../support/pg-database.js';
import { type Hookgate, startHookgate, TOKEN } from '../support/server.js';

const skip = await skipWithoutPostgres();

/** The longest a request may be held: 5 s to get a connection, then 20 s for its statement (postgres-connect.ts). */
const HOLD_BOUND_MS = 25_000;
const SENDERS = 8;
const ROUNDS = 20;
const ROUND_GAP_MS = 300;

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
      { host: url.hostname, port: url.port, path: '/hooks/wake', method: 'POST', agent, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
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
        res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, ms: Date.now() - started }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, ms: Date.now() - started }));
    req.end(body);
  });
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
    const url = new URL(hg.url);
    const agent = new Agent({ keepAlive: true, maxSockets: SENDERS });
    const answers = new Map<string, Answer>();
    let n = 0;
    let stop = false;
    const sender = async () => {
      while (!stop) {
        const text = `cut-${n++}`;
        answers.set(text, await post(agent, url, text));
      }
    };
    const senders = Array.from({ length: SENDERS }, sender);
    try {
      // Load first, so that batches are in flight when the connections are cut.
      while (answers.size < 200) await new Promise((r) => setTimeout(r, 20));
      for (let round = 0; round < ROUNDS; round++) {
        await db.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name]);
        await new Promise((r) => setTimeout(r, ROUND_GAP_MS));
      }
      // And after: the node is back at work on the same connections.
      const settled = answers.size;
      while (answers.size < settled + 200) await new Promise((r) => setTimeout(r, 20));
    } finally {
      stop = true;
      await Promise.all(senders);
      agent.destroy();
    }

    const all = [...answers.values()];
    const tally = (pred: (a: Answer) => boolean) => all.filter(pred).length;
    const summary = `${all.length} requests: ${tally((a) => a.status === 200)} × 200, ${tally((a) => a.status === 503)} × 503, errors ${JSON.stringify(all.filter((a) => a.error).map((a) => a.error))}, max hold ${Math.max(...all.map((a) => a.ms))} ms`;
    t.diagnostic(summary);
    assert.deepEqual(all.filter((a) => a.error !== undefined).map((a) => a.error), [], `no request is reset or left unanswered: ${summary}`);
    assert.deepEqual([...new Set(all.map((a) => a.status))].filter((s) => s !== 200 && s !== 503), [], summary);
    for (const a of all.filter((x) => x.status === 503)) {
      assert.equal(a.code, 'unavailable', summary);
      assert.equal(a.retryAfter, '1', `a 503 says when to retry: ${summary}`);
    }
    assert.ok(all.every((a) => a.ms < HOLD_BOUND_MS), summary);
    assert.equal(hg.proc.exitCode, null, 'the node is still running');

    // Every 200 is in the database, once; nothing answered 503 is (nothing was accepted).
    const stored = new Map<string, number>();
    for (const r of await db.query<{ text: string }>('SELECT text FROM system_events')) stored.set(r.text, (stored.get(r.text) ?? 0) + 1);
    const accepted = [...answers].filter(([, a]) => a.status === 200).map(([t]) => t);
    assert.deepEqual(accepted.filter((t) => stored.get(t) !== 1), [], `each 200 stored exactly once: ${summary}`);
    const refused = [...answers].filter(([, a]) => a.status === 503).map(([t]) => t);
    assert.deepEqual(refused.filter((t) => stored.has(t)), [], `a 503 stored nothing: ${summary}`);
  });
});
