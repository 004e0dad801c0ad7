/**
 * The WAL checkpointer thread: every `intervalMs` it copies committed WAL frames back into the database file, on a
 * connection of its own. A checkpoint fsyncs the WAL and the database file, which takes milliseconds; here that
 * never blocks the event loop that answers requests. PASSIVE checkpoints neither wait for nor block the writer;
 * once every frame is copied back, the writer starts the WAL over, so the file stays small.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './sqlite-open.js';

export interface CheckpointWorkerData {
  path: string;
  synchronous: 'normal' | 'full';
  busyTimeoutMs: number;
  intervalMs: number;
}

const { path, synchronous, busyTimeoutMs, intervalMs } = workerData as CheckpointWorkerData;
const db = openSqlite(path, synchronous, busyTimeoutMs);

// An error (disk full, I/O) is thrown: the worker exits and the store falls back to checkpoints on its own connection.
const timer = setInterval(() => db.pragma('wal_checkpoint(PASSIVE)'), intervalMs);

parentPort!.on('message', (msg: { close?: true }) => {
  if (!msg.close) return;
  clearInterval(timer);
  db.close();
  parentPort!.close();
});
