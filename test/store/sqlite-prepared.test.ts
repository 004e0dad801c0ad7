import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { prepared, rawRowReader } from '../../src/store/sqlite-prepared.js';

describe('rawRowReader', () => {
  it('gives the first row as an object keyed by column name, any name, with every value as SQLite gave it', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, "a b" TEXT, "it\'s" REAL, "q""uote" BLOB, n TEXT)');
    db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)').run(7, 'x', 1.5, Buffer.from([1, 2]), null);
    const read = rawRowReader(db.prepare('SELECT * FROM t WHERE id = ?'));
    const row = read(7);
    assert.deepEqual(row, { id: 7, 'a b': 'x', "it's": 1.5, 'q"uote': Buffer.from([1, 2]), n: null });
    assert.deepEqual(Object.keys(row ?? {}), ['id', 'a b', "it's", 'q"uote', 'n'], 'in column order');
    assert.equal(read(8), undefined, 'no row');
    db.close();
  });

  it('prepared() keeps one statement per text and connection', () => {
    const db = new Database(':memory:');
    assert.equal(prepared(db, 'SELECT 1'), prepared(db, 'SELECT 1'));
    assert.notEqual(prepared(db, 'SELECT 1'), prepared(new Database(':memory:'), 'SELECT 1'));
    db.close();
  });
});
