import { type FinishedRunState, FINISHED_RUN_STATES, isOneOf, type ReplyDisposition } from '../enums.js';
import { type Completion, type FinishedCompletion, PENDING, type CompletionWaiters } from '../hooks/completion.js';
import type { Logger } from '../log.js';
import type { Run, RunLookup } from '../store/types.js';
import { errorMessage } from '../text-safe.js';
import { isHeartbeatAck } from './heartbeat-ack.js';

/** Callers held at once, across all runs; more are answered `pending` at once (memory stays bounded). */
export const MAX_WAITERS = 1000;
/** The slow look at the store for runs another process (or `failRun`) finished without telling this one. */
export const WAIT_POLL_MS = 2000;

export interface CompletionWaiterRegistryDeps {
  store: RunLookup;
  logger: Logger;
  /** `heartbeat.ackMaxChars` of the current config: what counts as a silent reply, as for delivery. */
  ackMaxChars: () => number;
}

export interface CompletionWaiterRegistryOptions {
  maxWaiters?: number;
  pollMs?: number;
}

type Settle = (c: Completion) => void;

/**
 * The runtime's side of `waitForCompletion`. A wait registers first, then reads the store (the run may be finished
 * already, e.g. for a replay), so the run worker's notification (`finished`) cannot slip in between unseen; a slow
 * poll covers runs finished elsewhere (another node of a shared store, a run failed at claim). Every waiter is removed
 * when it is answered: on completion, at its bound, when its caller goes away, or at `close`.
 */
export class CompletionWaiterRegistry implements CompletionWaiters {
  private readonly byRun = new Map<string, Set<Settle>>();
  private count = 0;
  private poll: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly maxWaiters: number;
  private readonly pollMs: number;

  constructor(
    private readonly deps: CompletionWaiterRegistryDeps,
    options: CompletionWaiterRegistryOptions = {},
  ) {
    this.maxWaiters = options.maxWaiters ?? MAX_WAITERS;
    this.pollMs = options.pollMs ?? WAIT_POLL_MS;
  }

  /** Callers waiting now. */
  get size(): number {
    return this.count;
  }

  wait(runId: string, timeoutMs: number, signal: AbortSignal): Promise<Completion> {
    if (this.closed || signal.aborted) return Promise.resolve(PENDING);
    if (this.count >= this.maxWaiters) {
      this.deps.logger.warn(
        { runId, waiters: this.count },
        'too many callers waiting for runs: answered pending at once (the run goes on)',
      );
      return Promise.resolve(PENDING);
    }
    return new Promise<Completion>((resolve) => {
      const settle: Settle = (c) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.remove(runId, settle);
        resolve(c);
      };
      const onAbort = () => settle(PENDING);
      const timer = setTimeout(onAbort, timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      this.add(runId, settle);
      void this.check(runId);
    });
  }

  /** The run worker committed the end of `runId`: answer its waiters (from the store: what was committed). */
  finished(runId: string): void {
    if (this.byRun.has(runId)) void this.check(runId);
  }

  /** The process is stopping: answer every waiter `pending` now, and every later wait at once. */
  close(): void {
    this.closed = true;
    for (const settles of [...this.byRun.values()]) for (const settle of [...settles]) settle(PENDING);
  }

  private add(runId: string, settle: Settle): void {
    let settles = this.byRun.get(runId);
    if (!settles) this.byRun.set(runId, (settles = new Set()));
    settles.add(settle);
    this.count++;
    if (!this.poll) {
      this.poll = setInterval(() => {
        for (const id of this.byRun.keys()) void this.check(id);
      }, this.pollMs);
      this.poll.unref();
    }
  }

  private remove(runId: string, settle: Settle): void {
    const settles = this.byRun.get(runId);
    if (!settles?.delete(settle)) return;
    this.count--;
    if (settles.size === 0) this.byRun.delete(runId);
    if (this.count === 0 && this.poll) {
      clearInterval(this.poll);
      this.poll = undefined;
    }
  }

  private async check(runId: string): Promise<void> {
    let run: Run | undefined;
    try {
      run = await this.deps.store.getRun(runId);
    } catch (err) {
      // The next poll tries again; the waiter's bound still holds.
      this.deps.logger.warn({ runId, err: errorMessage(err) }, 'reading a waited-for run failed');
      return;
    }
    const settles = this.byRun.get(runId);
    if (!run || !settles || !isOneOf(FINISHED_RUN_STATES, run.state)) return;
    const completion = completionOf(run, run.state, this.deps.ackMaxChars());
    for (const settle of [...settles]) settle(completion);
  }
}

/**
 * A finished run as the held answer reports it. The disposition is OpenClaw's: `silent` when the reply is only the
 * `HEARTBEAT_OK` acknowledgement (the same test delivery uses), `empty` without text, else `visible`.
 */
export function completionOf(run: Run, state: FinishedRunState, ackMaxChars: number): FinishedCompletion {
  const reply = run.reply;
  const disposition: ReplyDisposition = !reply?.trim()
    ? 'empty'
    : isHeartbeatAck(reply, ackMaxChars)
      ? 'silent'
      : 'visible';
  const deliveryStatus = run.deliveryStatus ?? `nowhere:${state}`;
  return {
    status: state === 'succeeded' ? 'ok' : 'error',
    replyDisposition: disposition,
    reply,
    ...(state !== 'succeeded' ? { error: run.error ?? state } : {}),
    deliveryStatus,
    deliveryAttempted: deliveryStatus === 'outbox',
    ...openClawDelivery(deliveryStatus, state, disposition),
  };
}

/**
 * OpenClaw's delivery fields beside hookgate's `deliveryStatus`: `delivered` (handed to the outbox), and, when a reply
 * was meant to go out and did not, `deliverySuppressionReason` (an acknowledgement, or no text) or `deliveryError`.
 */
function openClawDelivery(
  deliveryStatus: string,
  state: FinishedRunState,
  disposition: ReplyDisposition,
): Pick<FinishedCompletion, 'delivered' | 'deliveryError' | 'deliverySuppressionReason'> {
  if (deliveryStatus === 'outbox') return { delivered: true };
  if (deliveryStatus === 'suppressed:heartbeat_ack')
    return { delivered: false, deliverySuppressionReason: 'heartbeat' };
  if (deliveryStatus === 'nowhere:no_route') return { delivered: false, deliveryError: 'delivery-failed' };
  if (state === 'succeeded' && disposition === 'empty' && deliveryStatus !== 'suppressed:deliver_false') {
    return { delivered: false, deliverySuppressionReason: 'empty' };
  }
  return { delivered: false };
}
