/**
 * Retention in bounded steps, each its own transaction, one turn of the event loop between them (`inSteps`, the loop
 * both kinds of prune and both drivers share). Of finished work (`RetentionStore`, part of `Store`): runs in a final
 * state, their deliveries, consumed system events, heartbeat deliveries and transcript turns no prompt will read
 * again; a step looks at one window of `limit` rows in seq order (the primary key, so finding it costs nothing however
 * large the table) and deletes those of them that may go; the walk goes from the oldest row and stops at the first
 * window whose rows are all newer than the cut-off. Of expired records (`Store.prune`): idempotency keys, received
 * records, refusal counts (ExpiredPruned).
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** The tables retention walks, in the order it walks them (transcripts before the runs they are matched with). */
export const RETENTION_KINDS = ['messages', 'runs', 'events', 'deliveries'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/**
 * Rows looked at per step. Transcript turns cost more per row (each is checked against its session's newest turns),
 * so their windows are smaller. Chosen so that a step stays well inside ~20 ms on a grown store (docs/performance.md).
 */
export const RETENTION_STEP_ROWS: Readonly<Record<RetentionKind, number>> = {
  messages: 250,
  runs: 300,
  events: 1000,
  deliveries: 1000,
};

/**
 * Received-log blocks looked at per step (`Store.prune`, both drivers). A block holds the received records of one
 * commit: one or two at a steady 1,000 requests/s, a few hundred at saturation, so a step deletes at most some tens
 * of thousands of records (about 10 ms); deleting ten minutes' worth at once held the writer for a quarter of a second
 * (docs/performance.md).
 */
export const RECEIVED_STEP_BLOCKS = 128;
/** Expired idempotency keys deleted per step. */
export const IDEMPOTENCY_STEP_KEYS = 1000;

/** What one step of a prune did: what it deleted, whether it was the last. */
export interface PruneStep {
  deleted: number;
  done: boolean;
  /**
   * How long the step's own statements held the writer, in ms, when the driver can tell it from the wait: on SQLite,
   * the step's op on the writer (its pages are committed with the batch it joined). Unset (PostgreSQL): the step's
   * round trip is the time.
   */
  heldMs?: number;
}

/** A step over finished work: also the window's last seq (the next step starts after it). */
export interface RetentionStep extends PruneStep {
  last: number;
  /** Deliveries deleted together with the window's runs (kind `runs` only). */
  deliveries: number;
}

/** How many steps (transactions) a prune took, and how long the longest took. */
export interface StepTally {
  steps: number;
  /** The longest step, in ms from sending it to its answer (on SQLite: its wait behind other writes included). */
  longestStepMs: number;
  /** The longest any step's statements held the writer, in ms (`RetentionStep.heldMs`, else its round trip). */
  longestHeldMs: number;
}

/** What a prune of finished work deleted, by table. */
export interface FinishedWorkPruned extends StepTally {
  runs: number;
  deliveries: number;
  events: number;
  messages: number;
}

/** What a prune of expired records deleted: idempotency keys; received records and refusal windows. */
export interface ExpiredPruned extends StepTally {
  idempotency: number;
  received: number;
}

export interface FinishedWorkPolicy {
  /**
   * Transcript turns kept per session whatever their age: the most a prompt reads back (the run worker's and the
   * heartbeat's history). Older turns than these, older than the cut-off, are deleted; so are all the turns of an
   * isolated run once its session is idle past the cut-off (no turn newer than it).
   */
  keepMessages: number;
  /** Overrides of RETENTION_STEP_ROWS (tests). */
  stepRows?: Partial<Record<RetentionKind, number>>;
  /** Aborted: no further step starts (a stop); what was deleted so far is returned. */
  signal?: AbortSignal;
}

export interface RetentionStore {
  /**
   * Delete finished work older than `before`, in bounded steps (separate transactions, yielding between them):
   * runs in a final state that finished before it, with their deliveries, when none of those is still pending;
   * heartbeat deliveries sent or failed before it; system events consumed before it; transcript turns as
   * `FinishedWorkPolicy.keepMessages` says. Never a queued or running run, a pending event or a pending delivery.
   */
  pruneFinished(before: number, policy: FinishedWorkPolicy): Promise<FinishedWorkPruned>;
}

/** One step of one kind, as a driver runs it: the window of `limit` rows after seq `after`. */
export type RetentionStepFn = (
  kind: RetentionKind,
  before: number,
  after: number,
  limit: number,
  keepMessages: number,
) => Promise<RetentionStep>;

const NO_STEPS: Readonly<StepTally> = { steps: 0, longestStepMs: 0, longestHeldMs: 0 };
/** A pass over finished work that deleted nothing, in no step. */
export const NOTHING_PRUNED: Readonly<FinishedWorkPruned> = {
  runs: 0,
  deliveries: 0,
  events: 0,
  messages: 0,
  ...NO_STEPS,
};
/** A prune of expired records that deleted nothing, in no step. */
export const NOTHING_EXPIRED: Readonly<ExpiredPruned> = { idempotency: 0, received: 0, ...NO_STEPS };

/**
 * Runs `next` step after step until one says it was the last, or `signal` aborts (no further step starts), with one
 * turn of the event loop between steps: the accepts and completions that waited meanwhile go first. Each step is
 * counted and timed into `tally` (its `heldMs`, else its round trip), then handed to `each`.
 */
export async function inSteps<S extends PruneStep>(
  next: () => Promise<S>,
  tally: StepTally,
  each: (step: S) => void,
  signal?: AbortSignal,
): Promise<void> {
  while (!signal?.aborted) {
    const t = performance.now();
    const s = await next();
    const ms = performance.now() - t;
    tally.steps++;
    tally.longestStepMs = Math.max(tally.longestStepMs, Math.round(ms * 10) / 10);
    tally.longestHeldMs = Math.max(tally.longestHeldMs, Math.round((s.heldMs ?? ms) * 10) / 10);
    each(s);
    if (s.done) return;
    await nextTurn();
  }
}

/** A pass over finished work, as both drivers run it: every kind, window after window. */
export async function pruneFinishedInSteps(
  step: RetentionStepFn,
  before: number,
  policy: FinishedWorkPolicy,
): Promise<FinishedWorkPruned> {
  const out: FinishedWorkPruned = { ...NOTHING_PRUNED };
  for (const kind of RETENTION_KINDS) {
    const limit = Math.max(1, policy.stepRows?.[kind] ?? RETENTION_STEP_ROWS[kind]);
    let after = 0;
    const next = () => step(kind, before, after, limit, policy.keepMessages);
    await inSteps(
      next,
      out,
      (s) => {
        out[kind] += s.deleted;
        out.deliveries += s.deliveries;
        after = s.last;
      },
      policy.signal,
    );
  }
  return out;
}

/** A prune of expired records, as both drivers run it: idempotency keys, then received records, then the rest. */
export async function pruneExpiredInSteps(
  steps: {
    idempotency: () => Promise<PruneStep>;
    received: () => Promise<PruneStep>;
    /** Refusal counts and the like: few rows, one step; what it deleted counts as received. */
    rest: () => Promise<PruneStep>;
  },
  signal?: AbortSignal,
): Promise<ExpiredPruned> {
  const out: ExpiredPruned = { ...NOTHING_EXPIRED };
  await inSteps(steps.idempotency, out, (s) => (out.idempotency += s.deleted), signal);
  await inSteps(steps.received, out, (s) => (out.received += s.deleted), signal);
  await inSteps(steps.rest, out, (s) => (out.received += s.deleted), signal);
  return out;
}
