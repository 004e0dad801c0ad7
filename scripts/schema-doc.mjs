// Prints docs/schema.md: the tables, columns and indexes of a freshly migrated store of each driver, read back from
// the live schema (not from the migration text), so the page shows what the migrations produce.
//
//   node --import tsx scripts/schema-doc.mjs > docs/schema.md
//
// PostgreSQL: HOOKGATE_TEST_PG_URL, by default postgres://postgres@127.0.0.1:5432/test; a schema of its own is created
// and dropped. test/store/schema-doc.test.ts fails when docs/schema.md differs from what this prints.
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { PG_SCHEMA_VERSION, migrate } from '../src/store/postgres-migrate.ts';
import { openSqlite } from '../src/store/sqlite-open.ts';

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

const cell = (v) =>
  v === null || v === undefined || v === '' ? '' : `\`${String(v).replace(/\s+/g, ' ').replace(/\|/g, '\\|')}\``;

function table(name, note, columns, indexes) {
  const out = [
    `### ${name}${note ? ` (${note})` : ''}`,
    '',
    '| column | type | not null | default | key |',
    '| --- | --- | --- | --- | --- |',
  ];
  for (const c of columns)
    out.push(`| ${c.name} | ${c.type} | ${c.notNull ? 'yes' : ''} | ${cell(c.default)} | ${c.key ?? ''} |`);
  out.push('');
  if (indexes.length) {
    out.push('Indexes:', '');
    for (const i of indexes) out.push(`- \`${i.name}\`${i.unique ? ' unique' : ''}: ${cell(i.def)}`);
    out.push('');
  }
  return out.join('\n');
}

/** The SQLite store's schema, from an in-memory store migrated from scratch. */
export function sqliteSchema() {
  const db = openSqlite(':memory:', 'normal');
  try {
    const version = db.pragma('user_version', { simple: true });
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
      .all();
    const parts = [];
    for (const { name } of tables) {
      // Columns with a UNIQUE constraint of their own (an index SQLite made for it, origin "u").
      const unique = new Set(
        db
          .pragma(`index_list(${JSON.stringify(name)})`)
          .filter((i) => i.origin === 'u')
          .map((i) => db.pragma(`index_info(${JSON.stringify(i.name)})`))
          .filter((cols) => cols.length === 1)
          .map((cols) => cols[0].name),
      );
      const columns = db.pragma(`table_info(${JSON.stringify(name)})`).map((c) => ({
        name: c.name,
        type: c.type,
        notNull: c.notnull === 1 || c.pk > 0,
        default: c.dflt_value,
        key: c.pk ? 'primary' : unique.has(c.name) ? 'unique' : undefined,
      }));
      const indexes = db
        .pragma(`index_list(${JSON.stringify(name)})`)
        .sort((a, b) => (a.name < b.name ? -1 : 1))
        .map((i) => {
          const sql = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`).get(i.name)?.sql;
          const cols = db
            .pragma(`index_info(${JSON.stringify(i.name)})`)
            .map((c) => c.name)
            .join(', ');
          // A created index: its definition after the table name (columns, WHERE); a constraint's: its columns.
          const def = sql ? sql.replace(/\s+/g, ' ').replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ /i, '') : `(${cols})`;
          return { name: i.name, unique: i.unique === 1, def };
        });
      parts.push(table(name, '', columns, indexes));
    }
    return { version, text: parts.join('\n') };
  } finally {
    db.close();
  }
}

/** The PostgreSQL store's schema, from a schema of its own migrated from scratch (dropped after). */
export async function postgresSchema(url = process.env.HOOKGATE_TEST_PG_URL || DEFAULT_PG_URL) {
  const schema = `hg_schema_doc_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(`SET search_path = ${schema}`);
    await migrate(client, 0, 'schema-doc');
    const q = async (sql) => (await client.query(sql, [schema])).rows;
    const tables =
      await q(`SELECT c.relname AS name, c.relpersistence AS persistence FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY c.relname`);
    const columns =
      await q(`SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity FROM information_schema.columns
      WHERE table_schema = $1 ORDER BY table_name, ordinal_position`);
    const keys =
      await q(`SELECT tc.table_name, kcu.column_name, tc.constraint_type FROM information_schema.table_constraints tc
      JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
      WHERE tc.table_schema = $1 AND tc.constraint_type IN ('PRIMARY KEY', 'UNIQUE')`);
    const indexes =
      await q(`SELECT t.relname AS table_name, i.relname AS name, x.indisunique AS unique, pg_get_indexdef(x.indexrelid) AS def
      FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = $1 ORDER BY t.relname, i.relname`);
    const functions =
      await q(`SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY p.proname`);
    const parts = [];
    for (const t of tables) {
      const keyOf = (col) => {
        const k = keys
          .filter((k) => k.table_name === t.name && k.column_name === col)
          .map((k) => (k.constraint_type === 'PRIMARY KEY' ? 'primary' : 'unique'));
        return k.length ? k.join(', ') : undefined;
      };
      const cols = columns
        .filter((c) => c.table_name === t.name)
        .map((c) => ({
          name: c.column_name,
          type: c.is_identity === 'YES' ? `${c.data_type} identity` : c.data_type,
          notNull: c.is_nullable === 'NO',
          default: c.column_default,
          key: keyOf(c.column_name),
        }));
      const idx = indexes
        .filter((i) => i.table_name === t.name)
        .map((i) => ({
          name: i.name,
          unique: i.unique,
          def: i.def.replace(new RegExp(`^CREATE (UNIQUE )?INDEX \\S+ ON (${schema}\\.)?\\S+ USING btree `), ''),
        }));
      parts.push(table(t.name, t.persistence === 'u' ? 'unlogged' : '', cols, idx));
    }
    const fns = functions.map((f) => `- \`${f.name}(${f.args}) → ${f.result}\``).join('\n');
    return { version: PG_SCHEMA_VERSION, text: `${parts.join('\n')}\n### Functions\n\n${fns}\n` };
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await client.end();
  }
}

export async function schemaDoc(pgUrl) {
  const sqlite = sqliteSchema();
  const postgres = await postgresSchema(pgUrl);
  return `# Store schema

What a freshly migrated store holds, for each driver: tables, columns and indexes, read from the live schema. The
two drivers have the same tables and columns (so \`hookgate store copy\` moves rows column by column); PostgreSQL adds
\`heartbeat_leases\`, \`lockouts\`, \`schema_migrations\` and the accept and run-claim functions. The migrations
themselves are \`src/store/sqlite-schema.ts\` and \`src/store/postgres-schema.ts\`.

Generated: \`node --import tsx scripts/schema-doc.mjs > docs/schema.md\` (PostgreSQL at \`HOOKGATE_TEST_PG_URL\`).
Do not edit by hand: \`test/store/schema-doc.test.ts\` fails when this page differs from what the script prints.

## SQLite (schema version ${sqlite.version})

${sqlite.text}
## PostgreSQL (schema version ${postgres.version})

${postgres.text}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(await schemaDoc());
}
