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
    private readonly commit: (ops: Op[]) => Promise<WriteResult[]>,
    private readonly onCommit?: (ms: number, ops: number) => void,
    /**
     * Whether the ingress is saturated (ingress/pressure.ts, through the store's options): while it is, the writes
     * that a batch's continuations make wait for the next turn instead of chaining in this one (see `flush`).
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
        setImmediate(() => void this.flush());
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

  private async flush(): Promise<void> {
    for (let rounds = 1; ; rounds++) {
      await this.commitQueued();
      // The writes that the answered batch's continuations make at once (an outbox sending its route's next
      // delivery, which may go only once the last is marked delivered) join a batch in this turn instead of waiting
      // for the next turn of the event loop: a nextTick runs once the promise callbacks of this turn have run.
      // Otherwise a route's deliveries go one per turn. Not while the ingress is saturated: requests first, the
      // runtime one step per turn (chaining then would take the core from the answers), its backlog drained once
      // the ingress is quiet. Bounded, so no chain holds the loop.
      if (rounds >= SAME_TURN_ROUNDS || this.ingressBusy()) break;
      await new Promise<void>((resolve) => process.nextTick(resolve));
      if (!this.queue.length) break;
    }
    if (this.queue.length) setImmediate(() => void this.flush());
    else this.inFlight = false;
  }

  /** Commit what is queued, batch after batch. */
  private async commitQueued(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue;
      this.queue = [];
      const started = performance.now();
      let results: WriteResult[];
      try {
        results = await this.commit(batch.map((p) => p.op));
        this.onCommit?.(performance.now() - started, batch.length);
      } catch (err) {
        this.onCommit?.(performance.now() - started, batch.length);
        const e =
          err instanceof StoreError
            ? err
            : new StoreError(`store commit failed: ${(err as Error).message}`, { cause: err });
        for (const p of batch) p.reject(e);
        continue;
      }
      results.forEach((r, i) => {
        const p = batch[i]!;
        if (r.ok) p.resolve(r.value);
        else p.reject(new StoreError(`store write failed: ${r.error}`));
      });
    }
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
