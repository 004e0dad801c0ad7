/**
 * The WAL checkpoint thread of a SQLite store (`storage.checkpoints: "thread"`): the writing connection stops
 * checkpointing and a thread of its own does it (sqlite-checkpoint-worker.ts), and `WalBound` holds the writes for a
 * moment when the WAL passes its size. A WAL started over is cut back to WAL_KEEP_BYTES (journal_size_limit, on the
 * writing connection: the one that starts it over). If the thread stops, checkpoints go back to the writing
 * connection and the store goes on.
 */
import type { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { CheckpointReply, CheckpointWorkerData } from './sqlite-checkpoint-worker.js';
import { WAL_KEEP_BYTES, WalBound } from './sqlite-files.js';
import { startWorker } from './start-worker.js';

/** How often the checkpoint thread copies the WAL back (while idle, a checkpoint with nothing to copy is a no-op). */
export const CHECKPOINT_INTERVAL_MS = 250;
/** SQLite's own default, restored on the writing connection if the checkpoint thread stops. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

export class Checkpointer {
  /** The thread while it runs; undefined once it stopped (checkpoints are back on the writing connection). */
  worker: Worker | undefined;
  readonly bound: WalBound;

  constructor(
    db: Database.Database,
    data: CheckpointWorkerData,
    isClosed: () => boolean,
    onWarning: ((message: string) => void) | undefined,
  ) {
    db.pragma('wal_autocheckpoint = 0');
    db.pragma(`journal_size_limit = ${WAL_KEEP_BYTES}`);
    // Its own V8 isolate: a young generation of 1 MiB is plenty for a timer and a pragma (the default lets it grow
    // larger, resident for nothing). No old-generation cap: running out would end the thread (it falls back, but
    // why risk it).
    const worker = startWorker('./sqlite-checkpoint-worker', import.meta.url, data, { maxYoungGenerationSizeMb: 1 });
    worker.unref();
    this.worker = worker;
    const bound = new WalBound(`${data.path}-wal`, worker);
    this.bound = bound;
    worker.on('message', (msg: CheckpointReply) => {
      if ('seq' in msg) bound.answered(msg);
      else if ('failing' in msg) {
        onWarning?.(
          `WAL checkpoints are failing (${msg.failing.code}: ${msg.failing.message}); retried every ${data.intervalMs} ms, the WAL grows until one succeeds`,
        );
      } else onWarning?.('WAL checkpoints work again');
    });
    const fallBack = (why: string) => {
      bound.release();
      if (isClosed() || this.worker !== worker) return;
      this.worker = undefined;
      db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
      onWarning?.(`the WAL checkpoint thread stopped (${why}); checkpoints run on the writing connection again`);
    };
    // An error crossing the thread may arrive as a plain object: its code and message are read, not assumed.
    worker.on('error', (err: unknown) => {
      const e = (err ?? {}) as { code?: unknown; message?: unknown };
      fallBack([e.code, e.message ?? String(err)].filter((x) => typeof x === 'string' && x).join(': '));
    });
    worker.on('exit', (code) => fallBack(`exit code ${code}`));
  }
}
