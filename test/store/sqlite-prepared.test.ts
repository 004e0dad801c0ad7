import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { prepared, rowBySeqReader } from '../../src/store/sqlite-prepared.js';

/** A table with every kind of column the reader treats apart, and names that need quoting. */
function table(): Database.Database {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE "t ""1" (seq INTEGER PRIMARY KEY, "a b" TEXT, "it's" REAL, "q""uote" BLOB, n INTEGER,
    last TEXT)`);
  return db;
}
const insert = (db: Database.Database, ...values: unknown[]) =>
  db.prepare('INSERT INTO "t ""1" VALUES (?, ?, ?, ?, ?, ?)').run(...values);
/** What better-sqlite3's own row object holds: the reader must give the same values, keys and key order. */
const own = (db: Database.Database, seq: number) =>
  db.prepare('SELECT * FROM "t ""1" WHERE seq = ?').get(seq) as Record<string, unknown> | undefined;

describe('rowBySeqReader', () => {
  it('gives the row as an object keyed by column name in the table’s order, every value as SQLite holds it', () => {
    const db = table();
    insert(db, 7, 'x\u0000"\\\n€😀', 0.1 + 0.2, Buffer.from([1, 2]), 2 ** 53 - 1, null);
    insert(db, 8, null, null, null, -42, 'end');
    const read = rowBySeqReader(db, 't "1');
    for (const seq of [7, 8]) {
      assert.deepEqual(read(seq), own(db, seq));
      assert.deepEqual(Object.keys(read(seq) ?? {}), Object.keys(own(db, seq) ?? {}), 'in column order');
    }
    assert.equal(read(7)?.["it's"], 0.1 + 0.2, 'a REAL to the last bit');
    assert.equal(read(9), undefined, 'no row');
    // Without a BLOB column the row is the JSON text alone.
    db.exec('CREATE TABLE u (seq INTEGER PRIMARY KEY, t TEXT, r REAL)');
    db.prepare('INSERT INTO u VALUES (1, ?, ?)').run('a"b', 1.5);
    const readU = rowBySeqReader(db, 'u');
    assert.deepEqual(readU(1), { seq: 1, t: 'a"b', r: 1.5 });
    assert.equal(readU(2), undefined, 'no row');
    db.close();
  });

  it('reads back any text and integer as they were written', () => {
    const db = table();
    const read = rowBySeqReader(db, 't "1');
    let seq = 0;
    fc.assert(
      fc.property(
        fc.option(fc.string({ unit: 'binary', maxLength: 200 })), // lone surrogates too
        fc.option(fc.maxSafeInteger()),
        fc.option(fc.double({ noNaN: true })),
        (text, n, real) => {
          insert(db, ++seq, text, real, null, n, text);
          assert.deepEqual(read(seq), own(db, seq));
        },
      ),
      { numRuns: 300 },
    );
    db.close();
  });

  it('prepared() keeps one statement per text and connection', () => {
    const db = new Database(':memory:');
    assert.equal(prepared(db, 'SELECT 1'), prepared(db, 'SELECT 1'));
    assert.notEqual(prepared(db, 'SELECT 1'), prepared(new Database(':memory:'), 'SELECT 1'));
    db.close();
  });
});
