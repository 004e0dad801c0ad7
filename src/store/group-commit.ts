/**
 * Group commit, both halves, driver-agnostic. `GroupCommit` (the caller's side) gathers every write of one turn of
 * the event loop into one batch and hands it to one commit; while that batch commits, new writes gather for the
 * next one, so batches grow with load and each commit is one WAL append. `commitIsolated` (the writer's side)
 * commits a batch in one transaction and, if one op throws, retries each op alone, so one bad op can neither take
 * the others down nor leave half of itself behind.
 */
import { performance } from 'node:perf_hooks';
import { StoreError } from '../errors.js';

/** The outcome of one op of a batch. Plain data: it crosses back from a writer thread by structured clone. */
export type WriteResult = { ok: true; value: unknown } | { ok: false; error: string };

interface Pending<Op> {
  op: Op;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/**
 * One batch's commit: its results, at once (the SQLite writer on the event loop's thread) or later (a writer thread,
 * PostgreSQL). A synchronous commit is answered without a promise of its own.
 */
export type Commit<Op> = (ops: Op[]) => WriteResult[] | Promise<WriteResult[]>;

/** A write is resolved only after its batch committed; a batch whose commit fails rejects all of its writes. */
export class GroupCommit<Op> {
  private queue: Pending<Op>[] = [];
  private inFlight = false;
  private closed = false;
  private broken: StoreError | undefined;

  /**
   * `commit` runs one batch and answers one result per op, in order (see `commitIsolated`). `onCommit` is told how
   * long each batch took, failed or not (the `hookgate_store_commit_duration_seconds` histogram).
   */
  constructor(
    private readonly commit: Commit<Op>,
    private readonly onCommit?: (ms: number, ops: number) => void,
    /**
     * Whether the ingress is saturated (ingress/pressure.ts, through the store's options): while it is, the writes
     * that a batch's continuations make wait for the next turn instead of chaining in this one (see `committed`).
     */
    private readonly ingressBusy: () => boolean = () => false,
  ) {}

  write(op: Op): Promise<unknown> {
    if (this.broken) return Promise.reject(this.broken);
    if (this.closed) return Promise.reject(new StoreError('the store is closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      if (!this.inFlight) {
        this.inFlight = true;
        // Let the other requests of this turn of the event loop join the batch.
        setImmediate(this.startTurn);
      }
    });
  }

  /** The error the writer broke with, if it did: every write from then on is rejected with it. */
  get failure(): StoreError | undefined {
    return this.broken;
  }

  /** The writer is gone: reject what waits for the next batch and every later write (the first error is kept). */
  fail(err: StoreError): void {
    this.broken ??= err;
    for (const p of this.queue) p.reject(err);
    this.queue = [];
  }

  /** Resolves once no batch is committing or waiting. */
  async idle(): Promise<void> {
    while (this.inFlight) await new Promise((r) => setTimeout(r, 5));
  }

  /** Reject every later write (call after `idle`). */
  close(): void {
    this.closed = true;
  }

  private readonly startTurn = (): void => this.commitQueued(1);

  /**
   * Commit what is queued, batch after batch, then `committed`. Callbacks, not an async function: a commit that
   * answers at once (SQLite on this thread, below saturation one batch per request or two) costs no promise here.
   */
  private commitQueued(rounds: number): void {
    while (this.queue.length) {
      const batch = this.queue;
      this.queue = [];
      const started = performance.now();
      let results: WriteResult[] | Promise<WriteResult[]>;
      try {
        results = this.commit(batch.map((p) => p.op));
      } catch (err) {
        this.rejectBatch(batch, started, err);
        continue;
      }
      if (!Array.isArray(results)) {
        results.then(
          (r) => {
            this.settle(batch, started, r);
            this.commitQueued(rounds);
          },
          (err: unknown) => {
            this.rejectBatch(batch, started, err);
            this.commitQueued(rounds);
          },
        );
        return;
      }
      this.settle(batch, started, results);
    }
    this.committed(rounds);
  }

  /**
   * The queue is empty. The writes that the answered batches' continuations make at once (an outbox sending its
   * route's next delivery, which may go only once the last is marked delivered) join a batch in this turn instead
   * of waiting for the next turn of the event loop: a tick queued from a microtask runs once every promise callback
   * of this turn has run. Otherwise a route's deliveries go one per turn. Not while the ingress is saturated:
   * requests first, the runtime one step per turn (chaining then would take the core from the answers), its backlog
   * drained once the ingress is quiet. Bounded, so no chain holds the loop.
   */
  private committed(rounds: number): void {
    if (rounds >= SAME_TURN_ROUNDS || this.ingressBusy()) return this.nextTurn();
    queueMicrotask(() => process.nextTick(() => (this.queue.length ? this.commitQueued(rounds + 1) : this.nextTurn())));
  }

  private nextTurn(): void {
    if (this.queue.length) setImmediate(this.startTurn);
    else this.inFlight = false;
  }

  private settle(batch: Pending<Op>[], started: number, results: WriteResult[]): void {
    this.onCommit?.(performance.now() - started, batch.length);
    for (let i = 0; i < batch.length; i++) {
      const r = results[i]!;
      if (r.ok) batch[i]!.resolve(r.value);
      else batch[i]!.reject(new StoreError(`store write failed: ${r.error}`));
    }
  }

  private rejectBatch(batch: Pending<Op>[], started: number, err: unknown): void {
    this.onCommit?.(performance.now() - started, batch.length);
    const e =
      err instanceof StoreError
        ? err
        : new StoreError(`store commit failed: ${(err as Error).message}`, { cause: err });
    for (const p of batch) p.reject(e);
  }
}

/** Batches committed in one turn of the event loop at most, one after another (see `flush`). */
const SAME_TURN_ROUNDS = 16;
/**
 * Commit `ops` with `all` (one transaction for the whole batch). If it throws, the batch was rolled back: call
 * `rolledBack` (forget what the rolled-back writes cached) and commit each op alone with `one` (its own transaction),
 * so only the op that throws again fails.
 */
export function commitIsolated<Op>(
  ops: Op[],
  all: (ops: Op[]) => unknown[],
  one: (op: Op) => unknown,
  rolledBack: () => void,
): WriteResult[] {
  try {
    return all(ops).map((value) => ({ ok: true, value }));
  } catch {
    rolledBack();
    return ops.map((op) => {
      try {
        return { ok: true, value: one(op) };
      } catch (err) {
        rolledBack();
        return { ok: false, error: (err as Error).message };
      }
    });
  }
}
