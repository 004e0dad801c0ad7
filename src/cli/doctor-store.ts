/**
 * `hookgate doctor`: the SQLite store. It is opened as it is (never created, never migrated), written to inside a
 * transaction that is rolled back, and checked with `PRAGMA quick_check`.
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { StorageConfig } from '../config/load.js';
import { exposedPaths } from '../private-files.js';
import { MIGRATE_HINT } from '../store/schema-version.js';
import { SQLITE_MIGRATIONS } from '../store/sqlite-schema.js';
import { logPath } from '../text-safe.js';
import { type Finding, finding } from './doctor-format.js';

/** How long the write probe waits for a running service's write lock before saying the store is busy. */
const BUSY_WAIT_MS = 2000;

/**
 * `fromFile`: the store is named by a config file, so serve will create it there when missing; without one (the
 * embedded default) a missing store more likely means the doctor runs in the wrong directory.
 */
export function checkStore(
  storage: Extract<StorageConfig, { driver: 'sqlite' }>,
  dir: string,
  fromFile: boolean,
): Finding[] {
  if (storage.path === ':memory:')
    return [
      finding(
        'warn',
        'store',
        'in memory (:memory:): runs and deliveries do not survive a restart',
        'set storage.path to a file',
      ),
    ];
  const path = resolve(dir, storage.path);
  const shown = logPath(path, 300);
  if (!existsSync(path)) return [missingStore(path, fromFile)];
  const out: Finding[] = [];
  out.push(...probe(path));
  const exposed = exposedPaths([dirname(path), path, `${path}-wal`, `${path}-shm`]);
  if (exposed.length) {
    out.push(
      finding(
        'warn',
        'store permissions',
        `readable by group or others: ${exposed.map((e) => `${logPath(e.path, 300)} (${e.mode})`).join(', ')}; it holds transcripts and replies`,
        `chmod 700 ${logPath(dirname(path), 300)} && chmod 600 ${shown}*`,
      ),
    );
  } else {
    out.push(finding('ok', 'store permissions', 'private to its owner (directory 0700, files 0600 or stricter)'));
  }
  const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
  out.push(finding('ok', 'store size', `${shown}: ${bytes(size(path))}; -wal ${bytes(size(`${path}-wal`))}`));
  return out;
}

function missingStore(path: string, fromFile: boolean): Finding {
  const shown = logPath(path, 300);
  if (!fromFile) {
    return finding(
      'warn',
      'store',
      `no store at ${shown}: the embedded default has not run in this directory`,
      'run the doctor where `hookgate serve` runs, or pass --config FILE',
    );
  }
  // The nearest directory that exists is where serve's mkdir starts.
  let existing = dirname(path);
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing);
  try {
    accessSync(existing, constants.W_OK | constants.X_OK);
  } catch (err) {
    return finding(
      'fail',
      'store',
      `no store at ${shown}, and it cannot be created: ${logPath(existing, 300)} is not writable (${codeOf(err)})`,
      "change storage.path, or the directory's owner or mode",
    );
  }
  return finding('ok', 'store', `no store yet at ${shown}: \`hookgate serve\` creates it (file 0600, directory 0700)`);
}

function probe(path: string): Finding[] {
  const shown = logPath(path, 300);
  let db: Database.Database;
  try {
    db = new Database(path, { fileMustExist: true, timeout: BUSY_WAIT_MS });
  } catch (err) {
    return [finding('fail', 'store', `cannot open ${shown} (${codeOf(err)})`, "check the file's owner and mode")];
  }
  const out: Finding[] = [];
  try {
    try {
      // Takes the write lock and gives it back: proves a write would go through, writes nothing.
      db.exec('BEGIN IMMEDIATE');
      db.exec('ROLLBACK');
      out.push(finding('ok', 'store', `${shown}: opens and is writable`));
    } catch (err) {
      const code = codeOf(err);
      if (code === 'SQLITE_BUSY') {
        out.push(
          finding(
            'warn',
            'store',
            `${shown}: another process held the write lock for ${BUSY_WAIT_MS / 1000} s (a busy service?)`,
          ),
        );
      } else if (code === 'SQLITE_NOTADB') {
        return [
          finding(
            'fail',
            'store',
            `${shown} is not a SQLite database`,
            'point storage.path at the store, or move this file away',
          ),
        ];
      } else {
        out.push(
          finding(
            'fail',
            'store',
            `${shown} is not writable (${code})`,
            "the service's user must own the file and its directory",
          ),
        );
      }
    }
    const check = db.pragma('quick_check', { simple: true });
    out.push(
      check === 'ok'
        ? finding('ok', 'store integrity', 'PRAGMA quick_check: ok')
        : finding(
            'fail',
            'store integrity',
            `PRAGMA quick_check: ${logPath(String(check), 200)}`,
            'stop hookgate and restore a backup (or `sqlite3 .recover` into a new file)',
          ),
    );
    const version = Number(db.pragma('user_version', { simple: true }));
    if (version > SQLITE_MIGRATIONS.length) {
      out.push(
        finding(
          'fail',
          'store schema',
          `version ${version}: written by a newer hookgate (this one knows ${SQLITE_MIGRATIONS.length})`,
          'upgrade hookgate',
        ),
      );
    } else if (version < SQLITE_MIGRATIONS.length) {
      out.push(
        finding(
          'warn',
          'store schema',
          `version ${version}; this hookgate needs ${SQLITE_MIGRATIONS.length}: the other commands refuse it until it is migrated`,
          MIGRATE_HINT,
        ),
      );
    }
  } catch (err) {
    const code = codeOf(err);
    out.push(
      finding(
        'fail',
        'store',
        code === 'SQLITE_NOTADB' ? `${shown} is not a SQLite database` : `${shown}: ${code}`,
        'point storage.path at the store',
      ),
    );
  } finally {
    db.close();
  }
  return out;
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'error';
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
