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
  const make = rowMaker(stmt.columns().map((c) => c.name));
  return (...params) => {
    const t = stmt.get(...params) as unknown[] | undefined;
    return t === undefined ? undefined : make(t);
  };
}

/**
 * The row object of a raw row, made as one object literal whose keys are the statement's column names (quoted by
 * JSON.stringify, so any name is a plain string key): a literal gets its layout when it is made, where setting the
 * columns one by one grew the object, and copied what it held, several times per row.
 */
function rowMaker(names: readonly string[]): (t: unknown[]) => Row {
  const fields = names.map((name, i) => `${JSON.stringify(name)}: t[${i}]`).join(', ');
  return new Function('t', `return { ${fields} };`) as (t: unknown[]) => Row;
}
