import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { fromRoot } from '../support/paths.js';

type Shape = {
  requests: number;
  days: number;
  end: number;
  agentEvery: number;
  heartbeatEvery?: number;
  block: number;
  wakeMode?: string;
};
const { fillStore } = (await import(fromRoot('bench/fill-store.mjs'))) as {
  fillStore: (dir: string, n: number, o?: Partial<Shape>) => Promise<Record<string, number>>;
};
const { shapeOf } = (await import(fromRoot('bench/compare-pages.mjs'))) as {
  shapeOf: (db: Database.Database) => Shape;
};

describe('bench/compare-pages.mjs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-compare-pages-test-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("reads back the shape a store was written with: the fill it compares with is the live store's", async () => {
    const end = Date.now() - 60_000;
    await fillStore(dir, 3000, { days: 0.01, end, agentEvery: 10, heartbeatEvery: 60, block: 1.5, wakeMode: 'now' });
    const db = new Database(join(dir, 'hookgate.db'), { readonly: true });
    try {
      const shape = shapeOf(db);
      assert.equal(shape.requests, 3000);
      assert.equal(shape.agentEvery, 10);
      assert.equal(shape.heartbeatEvery, 60);
      assert.equal(shape.wakeMode, 'now');
      // 3,000 requests in blocks of 1.5 make 2,000 blocks.
      assert.equal(shape.block, 1.5);
      // The first request's event is at the span's start and the last one's a step before its end.
      assert.ok(Math.abs(shape.days - 0.01) < 0.0001, String(shape.days));
      assert.ok(end - shape.end < 1000, String(end - shape.end));
    } finally {
      db.close();
    }
  });
});
