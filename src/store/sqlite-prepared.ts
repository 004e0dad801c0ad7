import type Database from 'better-sqlite3';

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
