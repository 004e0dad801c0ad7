/**
 * The admin listener's reads on a thread of their own (sqlite-read-worker.ts): the service's SQLite store sends each
 * page and summary query there and awaits the answer, so the hook listener's event loop only posts a message and
 * parses the result, however many rows the query walks. Short-lived commands read on their own connection instead
 * (SqlitePages itself): a thread would cost them its start-up for one query.
 */
import type { Worker } from 'node:worker_threads';
import { type ErrorCode, HookgateError, StoreError } from '../errors.js';
import { RequestTally, type StoredBreakdown } from './breakdown.js';
import type { SqlitePages } from './sqlite-pages.js';
import { startWorker } from './start-worker.js';

/** The queries that run on the thread: every AdminStore read. */
export type AdminReads = Pick<
  SqlitePages,
  | 'pageRuns'
  | 'pageDeliveries'
  | 'pageReceived'
  | 'queueDepths'
  | 'failuresSince'
  | 'breakdownSince'
  | 'refusalsStoredUntil'
>;
type Method = keyof AdminReads;

export interface ReadCall {
  id: number;
  method: Method;
  args: unknown[];
}
export type ReadReply = { id: number; result: unknown } | { id: number; error: { code: ErrorCode; message: string } };

/**
 * The thread's V8 heap: a page is at most 200 rows (or 256 blocks of received records per log) and a summary a few
 * counts, so a small one is plenty; a 1 MiB young generation as the checkpoint thread's (resident memory).
 */
const READ_THREAD_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 1 };

/**
 * How long the thread outlives its last read. A running thread is resident memory (its isolate, and the garbage its
 * reads promoted until V8 collects it); a new one costs the next read its start-up, off the event loop. An open
 * dashboard reads every few seconds while traffic flows, so it keeps the thread.
 */
export const READ_THREAD_IDLE_MS = 10_000;

export class SqliteReadThread implements AdminReads {
  private worker: Worker | undefined;
  /** Threads stopped for idleness that have not exited yet: close() waits for them too (their connections close first). */
  private readonly stopping = new Map<Worker, Promise<void>>();
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private closing = false;

  constructor(
    private readonly data: { path: string; busyTimeoutMs: number },
    private readonly idleMs = READ_THREAD_IDLE_MS,
  ) {}

  /** Whether a thread is running now (tests). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** Started with the first read: a service whose admin listener is off, or never read, has no such thread. */
  private started(): Worker {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (this.worker) return this.worker;
    const worker = startWorker('./sqlite-read-worker', import.meta.url, this.data, READ_THREAD_LIMITS);
    worker.unref();
    worker.on('message', (reply: ReadReply) => {
      const w = this.waiting.get(reply.id);
      if (!w) return;
      this.waiting.delete(reply.id);
      if ('error' in reply) w.reject(new HookgateError(reply.error.code, reply.error.message));
      else w.resolve(reply.result);
      if (this.waiting.size === 0 && !this.closing) {
        this.idleTimer = setTimeout(() => this.stopIdle(worker), this.idleMs);
        this.idleTimer.unref();
      }
    });
    // A thread that failed fails the reads it had; the next read starts a new one.
    const lost = (err: StoreError) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('error', (err) => lost(new StoreError(`SQLite read thread failed: ${err.message}`, { cause: err })));
    worker.on('exit', (code) => lost(new StoreError(`SQLite read thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private call<M extends Method>(method: M, ...args: Parameters<AdminReads[M]>): ReturnType<AdminReads[M]> {
    if (this.closing) return Promise.reject(new StoreError('the store is closed')) as ReturnType<AdminReads[M]>;
    const id = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.started().postMessage({ id, method, args } satisfies ReadCall);
    }) as ReturnType<AdminReads[M]>;
  }

  pageRuns(...a: Parameters<AdminReads['pageRuns']>) {
    return this.call('pageRuns', ...a);
  }
  pageDeliveries(...a: Parameters<AdminReads['pageDeliveries']>) {
    return this.call('pageDeliveries', ...a);
  }
  pageReceived(...a: Parameters<AdminReads['pageReceived']>) {
    return this.call('pageReceived', ...a);
  }
  queueDepths() {
    return this.call('queueDepths');
  }
  failuresSince(...a: Parameters<AdminReads['failuresSince']>) {
    return this.call('failuresSince', ...a);
  }
  refusalsStoredUntil() {
    return this.call('refusalsStoredUntil');
  }
  /** The tally crosses as its fields (structured clone keeps data, not classes): made a RequestTally again here. */
  async breakdownSince(...a: Parameters<AdminReads['breakdownSince']>): Promise<StoredBreakdown> {
    const b = await this.call('breakdownSince', ...a);
    return { ...b, requests: RequestTally.revive(b.requests) };
  }

  /** No read since the last answer: the thread closes its connection and ends; the next read starts another. */
  private stopIdle(worker: Worker): void {
    this.idleTimer = undefined;
    if (this.worker !== worker || this.waiting.size > 0) return;
    this.worker = undefined;
    this.stopping.set(
      worker,
      this.stopped(worker).then(() => void this.stopping.delete(worker)),
    );
  }

  /** The thread takes messages in order: the reads posted before `close` are answered before it ends. */
  private stopped(worker: Worker): Promise<void> {
    return new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      worker.postMessage({ close: true });
    });
  }

  /** Waits for the reads in flight, then closes the thread's connection (before the store's own: it checkpoints last). */
  async close(): Promise<void> {
    this.closing = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const worker = this.worker;
    if (worker) {
      worker.ref();
      await this.stopped(worker);
    }
    // Unreferenced, a thread that is ending would not keep the process alive until its connection is closed.
    for (const w of this.stopping.keys()) w.ref();
    await Promise.all(this.stopping.values());
  }
}
