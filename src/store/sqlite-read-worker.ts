/**
 * The SQLite admin-read thread: the admin listener's page and summary queries (sqlite-pages.ts) on a connection of
 * its own, so a read that walks many rows waits here and never holds the event loop that answers hooks. The
 * connection only reads (`query_only`); WAL lets it read while the writer commits. See sqlite-read-thread.ts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { HookgateError } from '../errors.js';
import { openSqlite } from './sqlite-open.js';
import { SqlitePages } from './sqlite-pages.js';
import type { ReadCall, ReadReply } from './sqlite-read-thread.js';

const { path, busyTimeoutMs } = workerData as { path: string; busyTimeoutMs: number };
// Opened with the first call, which the store sends only after probing the -shm (ShmGuard in sqlite-files.ts): opening
// maps it. The store's own connection migrated the schema (if its command may) before.
let pages: SqlitePages | undefined;
let db: ReturnType<typeof openSqlite> | undefined;

parentPort!.on('message', async (msg: ReadCall | { close: true }) => {
  if ('close' in msg) {
    db?.close();
    parentPort!.close();
    return;
  }
  let reply: ReadReply;
  try {
    if (!pages) {
      db = openSqlite(path, 'normal', busyTimeoutMs, { schemaPolicy: 'current' });
      db.pragma('query_only = ON');
      // A page reads few pages of the file, a walk of received blocks reads each once: a small cache does (resident memory).
      db.pragma('cache_size = -512');
      pages = new SqlitePages(db);
    }
    const fn = pages[msg.method] as (...args: unknown[]) => Promise<unknown>;
    reply = { id: msg.id, result: await fn.apply(pages, msg.args) };
  } catch (err) {
    // Errors cross as their code: the admin listener branches on it (a bad cursor is the caller's 400).
    reply =
      err instanceof HookgateError
        ? { id: msg.id, error: { code: err.code, message: err.message } }
        : {
            id: msg.id,
            error: { code: 'store_unavailable', message: `SQLite read failed: ${(err as Error).message}` },
          };
  }
  parentPort!.postMessage(reply);
});
