import Database from 'better-sqlite3';
import { ensurePrivateFile } from '../private-files.js';
import { logPath } from '../text-safe.js';
import { assertSchemaUsable, type SchemaPolicy } from './schema-version.js';
import { WAL_CHECKPOINT_BYTES } from './sqlite-files.js';
import { SQLITE_MIGRATIONS } from './sqlite-schema.js';

/** The page cache of each connection, in KiB as SQLite takes it (a negative cache_size). */
export const SQLITE_CACHE_KIB = -2000;

/** How a connection treats the store's schema: see schema-version.ts. */
export interface SqliteSchemaOptions {
  schemaPolicy?: SchemaPolicy;
  /** Told the schema version found at open and the one the store has now (equal: nothing migrated; found 0: created). */
  onSchema?: (from: number, to: number) => void;
}

/**
 * Open (creating if needed) a SQLite database in WAL mode; with schema "migrate" (the default) bring its schema up
 * to date, with "current" refuse one that is older (StoreSchemaError). A newer schema is always refused. A new
 * database is created 0600 in a 0700 directory before SQLite opens it: SQLite gives its -wal and -shm files the mode
 * of the database file, and would itself create the database 0644 (less the umask).
 */
export function openSqlite(
  path: string,
  synchronous: 'normal' | 'full',
  busyTimeoutMs = 5000,
  opts: SqliteSchemaOptions = {},
): Database.Database {
  if (path !== ':memory:') ensurePrivateFile(path);
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    // SQLite's own default page cache (2 MiB): better-sqlite3 builds with 16 MiB per connection, which fills as the
    // store grows under load, resident memory for no CPU saved: a page that misses this cache is in the OS's, a
    // pread away.
    db.pragma(`cache_size = ${SQLITE_CACHE_KIB}`);
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
    // A WAL that once grew past its usual size (a long step, a reader's snapshot keeping it from starting over) is cut
    // back to this when it next starts over, rather than keeping its high-water mark on disk. Above SQLite's own
    // checkpoint size (4 MiB), so the usual cycle never truncates and regrows the file; the checkpoint thread sets its own.
    db.pragma(`journal_size_limit = ${WAL_CHECKPOINT_BYTES}`);
    const version = db.pragma('user_version', { simple: true }) as number;
    assertSchemaUsable(version, SQLITE_MIGRATIONS.length, logPath(path, 300), opts.schemaPolicy ?? 'migrate');
    for (let v = version; v < SQLITE_MIGRATIONS.length; v++) {
      db.transaction(() => {
        db.exec(SQLITE_MIGRATIONS[v]!);
        db.pragma(`user_version = ${v + 1}`);
      })();
    }
    opts.onSchema?.(version, SQLITE_MIGRATIONS.length);
  } catch (err) {
    // Closed, not leaked: a service that retries the open (a full disk at start) would otherwise gather descriptors.
    db.close();
    throw err;
  }
  return db;
}
