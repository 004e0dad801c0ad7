import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { fromRoot } from '../support/paths.js';

type Hookgate = { url: string; child: import('node:child_process').ChildProcess; db: { close(): void } };
const { fillStore } = (await import(fromRoot('bench/fill-store.mjs'))) as {
  fillStore: (dir: string, n: number, o?: { days?: number }) => Promise<Record<string, number>>;
};
type Phases = { phase(name: string): void; stop(): Record<string, Record<string, number>> };
const { storeMarks, restoreStore, rssPhases } = (await import(fromRoot('bench/grown.mjs'))) as {
  storeMarks: (path: string) => unknown;
  restoreStore: (path: string, marks: unknown) => void;
  rssPhases: (pids: Record<string, number>) => Phases;
};
const pinned = (await import(fromRoot('bench/pinned.mjs'))) as {
  startHookgate: (o: object, dir: string) => Promise<Hookgate>;
  drain: (hg: Hookgate) => Promise<unknown>;
  TOKEN: string;
};

const TABLES = ['received_log', 'system_events', 'runs', 'session_messages', 'deliveries', 'idempotency'] as const;
type Shape = Record<(typeof TABLES)[number] | 'newestReceived', number>;

/** Rows per table, and the newest received block's time (the overview and the breakdown read the last hour). */
function shape(path: string): Shape {
  const db = new Database(path, { readonly: true });
  try {
    const count = (t: string) => db.prepare(`SELECT COUNT(*) FROM ${t}`).pluck().get() as number;
    const out = Object.fromEntries(TABLES.map((t) => [t, count(t)])) as Shape;
    out.newestReceived = db.prepare('SELECT MAX(at) FROM received_log').pluck().get() as number;
    return out;
  } finally {
    db.close();
  }
}

describe('bench/grown.mjs: a kept store', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-grown-test-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is given back as the fill left it once a run on it ends', async () => {
    await fillStore(dir, 400, { days: 1 });
    const path = join(dir, 'hookgate.db');
    const filled = shape(path);
    const marks = storeMarks(path);
    const hg = await pinned.startHookgate({ serverCpu: null, nodeArgs: [] }, dir);
    try {
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${hg.url}/hooks/${i % 2 ? 'wake' : 'agent'}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${pinned.TOKEN}`,
            'content-type': 'application/json',
            'idempotency-key': `k${i}`,
          },
          body: JSON.stringify({ text: `wake ${i}`, message: `run ${i}` }),
        });
        assert.equal(res.status, 200);
        await res.arrayBuffer();
      }
      await pinned.drain(hg);
    } finally {
      hg.db.close();
      hg.child.kill('SIGTERM');
      await new Promise((ok) => hg.child.once('exit', ok));
    }
    const ran = shape(path);
    assert.ok(ran.runs > filled.runs && ran.received_log > filled.received_log && ran.idempotency > 0, 'the run wrote');
    restoreStore(path, marks);
    assert.deepEqual(shape(path), filled);
  });
});

describe('bench/grown.mjs: rssPhases', () => {
  it('puts the resident memory a process took in the phase it took it in', () => {
    const rss = rssPhases({ self: process.pid });
    rss.phase('before');
    rss.phase('grown');
    // 64 MiB written page by page is resident at once; phase() and stop() sample as they are called: no timer awaited.
    const held = Buffer.alloc(64 * 1024 * 1024, 1);
    rss.phase('after');
    const peaks = rss.stop().self!;
    assert.equal(held[held.length - 1], 1);
    assert.deepEqual(Object.keys(peaks), ['start', 'before', 'grown', 'after']);
    assert.ok(peaks.grown! >= peaks.before! + 60, `grown ${peaks.grown} MiB, before ${peaks.before} MiB`);
    assert.ok(peaks.after! >= peaks.before! + 60);
  });
});
