import Database from 'better-sqlite3';
import { ensurePrivateFile } from '../private-files.js';
import { SQLITE_MIGRATIONS } from './sqlite-schema.js';

/** The page cache of each connection, in KiB as SQLite takes it (a negative cache_size). */
export const SQLITE_CACHE_KIB = -2000;

/**
 * Open (creating if needed) a SQLite database in WAL mode and bring its schema up to date. A new database is created
 * 0600 in a 0700 directory before SQLite opens it: SQLite gives its -wal and -shm files the mode of the database
 * file, and would itself create the database 0644 (less the umask).
 */
export function openSqlite(path: string, synchronous: 'normal' | 'full', busyTimeoutMs = 5000): Database.Database {
  if (path !== ':memory:') ensurePrivateFile(path);
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    // SQLite's own default page cache (2 MiB): better-sqlite3 builds with 16 MiB per connection, which filled as the
    // store grew under the bench's load (peak RSS 123 → 111 MiB at 2 MiB, CPU per request unchanged: a page that
    // misses this cache is in the OS's, a pread away).
    db.pragma(`cache_size = ${SQLITE_CACHE_KIB}`);
    db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
    const version = db.pragma('user_version', { simple: true }) as number;
    for (let v = version; v < SQLITE_MIGRATIONS.length; v++) {
      db.transaction(() => {
        db.exec(SQLITE_MIGRATIONS[v]!);
        db.pragma(`user_version = ${v + 1}`);
      })();
    }
  } catch (err) {
    // Closed, not leaked: a service that retries the open (a full disk at start) would otherwise gather descriptors.
    db.close();
    throw err;
  }
  return db;
}
