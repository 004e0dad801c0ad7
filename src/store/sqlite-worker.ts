/**
 * The SQLite writer thread: owns the only writing connection. It receives batches of write ops from the main
 * thread, commits each batch in one transaction (group commit) and posts the results back. Keeping the writes
 * here keeps the request thread free while SQLite works.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './sqlite-open.js';
import { SqliteWriter, type WriteOp } from './sqlite-writer.js';

const { path, synchronous, busyTimeoutMs } = workerData as {
  path: string;
  synchronous: 'normal' | 'full';
  busyTimeoutMs: number;
};
// Opened with the first batch, which the store sends only after probing the -shm (ShmGuard in sqlite-files.ts):
// opening writes to its map too. The store's own connection migrated the schema (if its command may) before.
let writer: SqliteWriter | undefined;

parentPort!.on('message', (msg: { batch: WriteOp[] } | { close: true }) => {
  if ('close' in msg) {
    writer?.db.close();
    parentPort!.close();
    return;
  }
  writer ??= new SqliteWriter(openSqlite(path, synchronous, busyTimeoutMs, { schemaPolicy: 'current' }));
  parentPort!.postMessage({ results: writer.runBatch(msg.batch) });
});
