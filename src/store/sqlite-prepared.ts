import type Database from 'better-sqlite3';
import type { Row } from './record-encoding.js';

const statements = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/**
 * The statement for `sql` on `db`, prepared once per connection (preparing parses the SQL, and some statements run
 * for every run). For constant SQL only: the cache keeps every text it is given.
 */
export function prepared(db: Database.Database, sql: string): Database.Statement {
  let m = statements.get(db);
  if (!m) statements.set(db, (m = new Map()));
  let s = m.get(sql);
  if (!s) m.set(sql, (s = db.prepare(sql)));
  return s;
}

/**
 * `stmt`'s first row as an object built from better-sqlite3's raw row (an array): its own row objects, each column
 * set by name from C++, cost ~1.5 µs more for a row of the runs table, and every claimed run and delivery is read
 * this way.
 */
export function rawRowReader(stmt: Database.Statement): (...params: unknown[]) => Row | undefined {
  stmt.raw(true);
  const names = stmt.columns().map((c) => c.name);
  return (...params) => {
    const t = stmt.get(...params) as unknown[] | undefined;
    if (t === undefined) return undefined;
    const row: Row = {};
    for (let i = 0; i < names.length; i++) row[names[i]!] = t[i];
    return row;
  };
}
