/**
 * The WAL checkpointer thread: every `intervalMs` it copies committed WAL frames back into the database file, on a
 * connection of its own. A checkpoint fsyncs the WAL and the database file, which takes milliseconds; here that
 * never blocks the event loop that answers requests. PASSIVE checkpoints neither wait for nor block the writer.
 *
 * Under sustained load PASSIVE alone never lets the WAL start over: the writer appends while each checkpoint runs,
 * so the last frames are never all copied back when the next write begins (4 clients for 40 s grew it to 1.8 GB).
 * So the writer also asks for a checkpoint (`{ checkpoint: seq }`) when the WAL passes a size, and holds its next
 * batch until the answer: with nothing appended meanwhile, the checkpoint copies every frame and the next write
 * starts the WAL over (see WalBound in sqlite-files.ts).
 *
 * A failing checkpoint (SQLITE_FULL on a full disk, an I/O error) never ends the thread: it is reported once, with
 * the SQLite code and message (`{ failing }`), retried every interval, and reported again when it works (`{ recovered }`).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { ShmGuard } from './sqlite-files.js';
import { openSqlite } from './sqlite-open.js';

export interface CheckpointWorkerData {
  path: string;
  synchronous: 'normal' | 'full';
  busyTimeoutMs: number;
  intervalMs: number;
}

/** What the thread posts back. `done`: every frame of the WAL is in the database file. */
export type CheckpointReply =
  | { seq: number; done: boolean }
  | { failing: { code: string; message: string } }
  | { recovered: true };

const { path, synchronous, busyTimeoutMs, intervalMs } = workerData as CheckpointWorkerData;
let failing: string | undefined;
const shm = new ShmGuard(`${path}-shm`);
// Opened at the first checkpoint, after the -shm was probed: opening writes to its map too. The store's own
// connection migrated the schema (if its command may) before this thread started.
let db: Database.Database | undefined;

/** One PASSIVE checkpoint; whether it copied every frame back (false when it failed). */
function checkpoint(): boolean {
  try {
    // A checkpoint writes the WAL index through the -shm's map: probed first, or an immutable -shm is a SIGBUS.
    const refused = shm.refused();
    if (refused) throw refused;
    db ??= openSqlite(path, synchronous, busyTimeoutMs, { schemaPolicy: 'current' });
    const [row] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    if (failing !== undefined) {
      failing = undefined;
      parentPort!.postMessage({ recovered: true } satisfies CheckpointReply);
    }
    return !!row && row.busy === 0 && row.log === row.checkpointed;
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    const code = typeof e.code === 'string' ? e.code : 'UNKNOWN';
    if (failing !== code) {
      failing = code;
      parentPort!.postMessage({ failing: { code, message: String(e.message ?? err) } } satisfies CheckpointReply);
    }
    return false;
  }
}

const timer = setInterval(checkpoint, intervalMs);

parentPort!.on('message', (msg: { close?: true; checkpoint?: number }) => {
  if (msg.checkpoint !== undefined) {
    parentPort!.postMessage({ seq: msg.checkpoint, done: checkpoint() } satisfies CheckpointReply);
    return;
  }
  if (!msg.close) return;
  clearInterval(timer);
  db?.close();
  parentPort!.close();
});
