/**
 * The SQLite writer thread: owns the only writing connection. It receives batches of write ops from the main
 * thread, commits each batch in one transaction (group commit) and posts the results back. Keeping the writes
 * here keeps the request thread free while SQLite works.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './sqlite-open.js';
import { SqliteWriter, type WriteOp } from './sqlite-writer.js';

const { path, synchronous, busyTimeoutMs } = workerData as { path: string; synchronous: 'normal' | 'full'; busyTimeoutMs: number };
// The store's own connection migrated the schema (if its command may) before this thread started.
const db = openSqlite(path, synchronous, busyTimeoutMs, { schemaPolicy: 'current' });
const writer = new SqliteWriter(db);

parentPort!.on('message', (msg: { batch: WriteOp[] } | { close: true }) => {
  if ('close' in msg) {
    db.close();
    parentPort!.close();
    return;
  }
  parentPort!.postMessage({ results: writer.runBatch(msg.batch) });
});
