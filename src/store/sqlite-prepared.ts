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
 * A reader of `table`'s row by its seq, as an object keyed by column name in the table's order. better-sqlite3 on
 * Node 20 builds a row, raw or not, by setting each column on a growing array or object from C++, ~1,200
 * instructions a column (about 52,000 for a claimed run and its delivery, every run reads both). The INTEGER, REAL
 * and TEXT columns come instead as one JSON array text, SQLite's `json_array` (a REAL to its last bit), read with
 * `JSON.parse`; a column of another type comes on its own (JSON holds no BLOB).
 */
export function rowBySeqReader(db: Database.Database, table: string): (seq: number) => Row | undefined {
  const columns = db.prepare(`PRAGMA table_info(${quoted(table)})`).all() as Array<{ name: string; type: string }>;
  // Each column's value in the row object: from the JSON array `j`, or from the raw row `r` after the JSON text.
  const json: string[] = [];
  const own: string[] = [];
  const fields = columns.map((c): [string, string] =>
    JSON_TYPES.has(c.type)
      ? [c.name, `j[${json.push(quoted(c.name)) - 1}]`]
      : [c.name, `r[${own.push(quoted(c.name))}]`],
  );
  const selected = [`json_array(${json.join(', ')})`, ...own].join(', ');
  const stmt = db.prepare(`SELECT ${selected} FROM ${quoted(table)} WHERE seq = ?`);
  const make = rowMaker(fields);
  if (own.length === 0) {
    // The JSON text alone, not in an array of one (a raw row is built the same slow way).
    stmt.pluck(true);
    return (seq) => {
      const text = stmt.get(seq) as string | undefined;
      return text === undefined ? undefined : make(JSON.parse(text) as unknown[], NO_COLUMNS);
    };
  }
  stmt.raw(true);
  return (seq) => {
    const row = stmt.get(seq) as [string, ...unknown[]] | undefined;
    return row === undefined ? undefined : make(JSON.parse(row[0]) as unknown[], row);
  };
}

/** The declared column types whose values JSON holds exactly. */
const JSON_TYPES = new Set(['INTEGER', 'REAL', 'TEXT']);
const NO_COLUMNS: unknown[] = [];

/** An SQL identifier, quoted. */
const quoted = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/**
 * The row object, made as one object literal whose keys are the column names (quoted by JSON.stringify, so any name
 * is a plain string key) and whose values are read from the JSON array `j` or the raw row `r`: a literal gets its
 * layout when it is made, where setting the columns one by one grew the object, and copied what it held, several
 * times per row.
 */
function rowMaker(fields: ReadonlyArray<readonly [string, string]>): (j: unknown[], r: unknown[]) => Row {
  const body = fields.map(([name, value]) => `${JSON.stringify(name)}: ${value}`).join(', ');
  return new Function('j', 'r', `return { ${body} };`) as (j: unknown[], r: unknown[]) => Row;
}
