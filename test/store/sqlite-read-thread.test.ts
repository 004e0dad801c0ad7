/**
 * The SQLite admin reads on their own thread (src/store/sqlite-read-thread.ts): while a read that walks many records
 * is in flight, the caller's event loop keeps turning (the hook listener answers on it); the same read on the
 * caller's connection holds it for the whole read. Measured in turns of the event loop, not in milliseconds, so a
 * busy machine only makes the threaded read take more turns.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite.js';
import { SqliteReadThread } from '../../src/store/sqlite-read-thread.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

const HOUR = 3_600_000;

/** Turns of the event loop (setImmediate callbacks) until `p` settles. */
async function turnsWhile<T>(start: () => Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let done = false;
  const spin = () => {
    if (done) return;
    turns++;
    setImmediate(spin);
  };
  setImmediate(spin);
  const p = start();
  try {
    return { value: await p, turns };
  } finally {
    done = true;
  }
}

describe('sqlite admin reads on a thread', () => {
  let dir: string;
  const now = Date.now();
  const since = now - HOUR;
  let expected = 0;

  before(async () => {
    dir = tempDir();
    // The last hour holds 300 windows of 400 refusal counts each: a breakdown parses and tallies 120,000 of them.
    const store = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline' });
    const counts = JSON.stringify(
      Array.from({ length: 400 }, (_, i) => [401, 'unauthorized', `path-${i % 40}`, `10.0.${i}.0/24`, 2]),
    );
    const ins = store.db.prepare('INSERT INTO refusal_log (at, window_ms, counts) VALUES (?, 60000, ?)');
    store.db.transaction(() => {
      for (let w = 0; w < 300; w++) ins.run(since + 1000 + w * 10_000, counts);
    })();
    expected = 300 * 400 * 2;
    await store.close();
  });
  after(() => removeDir(dir));

  const refused = (b: Awaited<ReturnType<SqliteStore['breakdownSince']>>) =>
    b.requests.result().byCode.reduce((n, c) => n + c.count, 0);

  it('a read in flight on the thread leaves the event loop turning; on the caller connection it holds it', async () => {
    const threaded = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline', adminReads: 'thread' });
    const inline = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline' });
    try {
      await threaded.queueDepths(); // the thread started and its connection opened: not counted below
      const t = await turnsWhile(() => threaded.breakdownSince(since, now + 60_000, 60_000));
      const i = await turnsWhile(() => inline.breakdownSince(since, now + 60_000, 60_000));
      // The same answer both ways (the tally crossed the thread and is a RequestTally again).
      assert.equal(refused(t.value), expected);
      assert.equal(refused(i.value), expected);
      assert.deepEqual(t.value.requests.result(), i.value.requests.result());
      // Inline, the whole read runs before the loop turns again: at most the turn that resolves it.
      assert.ok(i.turns <= 1, `inline read: ${i.turns} turns`);
      // On the thread, the loop turns all along (thousands of times on an idle machine; 20 is far below that).
      assert.ok(t.turns >= 20, `threaded read: only ${t.turns} turns`);
    } finally {
      await threaded.close();
      await inline.close();
    }
  });

  it('reads in flight when the store closes are answered; a read after close is refused', async () => {
    const store = new SqliteStore({ path: join(dir, 'hookgate.db'), writer: 'inline', adminReads: 'thread' });
    const reads = Promise.all([
      store.breakdownSince(since, now + 60_000, 60_000),
      store.queueDepths(),
      store.failuresSince(since),
    ]);
    await store.close();
    const [b, depths, failures] = await reads;
    assert.equal(refused(b), expected);
    assert.deepEqual(depths, { runs: { queued: 0, running: 0 }, outboxPending: 0, systemEventsPending: 0 });
    assert.equal(failures.refused, expected);
    await assert.rejects(store.queueDepths(), (err: { code?: string }) => err.code === 'store_unavailable');
  });

  it('the thread ends once idle, and the next read starts another', async () => {
    const reads = new SqliteReadThread({ path: join(dir, 'hookgate.db'), busyTimeoutMs: 5000 }, 20);
    const stopped = async () => {
      // Polled, not timed: on a busy machine the thread only takes longer to end.
      for (let i = 0; i < 1000 && reads.running; i++) await new Promise((r) => setTimeout(r, 10));
      return !reads.running;
    };
    try {
      assert.equal(reads.running, false, 'no thread before the first read');
      const [b, depths] = await Promise.all([reads.breakdownSince(since, now + 60_000, 60_000), reads.queueDepths()]);
      assert.equal(refused(b), expected);
      assert.deepEqual(depths, { runs: { queued: 0, running: 0 }, outboxPending: 0, systemEventsPending: 0 });
      assert.ok(await stopped(), 'the thread still runs 10 s after its last read');
      assert.equal((await reads.failuresSince(since)).refused, expected);
      assert.equal(reads.running, true, 'a read after the stop started a new thread');
      assert.ok(await stopped());
    } finally {
      await reads.close();
    }
    await assert.rejects(reads.queueDepths(), (err: { code?: string }) => err.code === 'store_unavailable');
  });
});
