/**
 * `waitForCompletion: true` on `/hooks/agent`: after the commit, the answer is held until the run ends (or a bound
 * passes) and then carries `completion`. The hooks side only knows `CompletionWaiters`; the runtime implements it.
 */
import type { CompletionStatus, ReplyDisposition } from '../enums.js';
import type { HooksContext } from './context.js';

/** The run has not ended within the bound (or the wait was refused or cut short): it goes on regardless. */
export interface PendingCompletion {
  status: Extract<CompletionStatus, 'pending'>;
}

/** How a finished run ended, as the held answer reports it. */
export interface FinishedCompletion {
  status: Exclude<CompletionStatus, 'pending'>;
  replyDisposition: ReplyDisposition;
  /** The reply text as the run recorded it (OpenClaw leaves it out; hookgate's callers asked for it). */
  reply: string | null;
  /** Why the run failed or timed out (status `error` only). */
  error?: string;
  /** The run's recorded delivery status: `outbox`, `suppressed:deliver_false`, `suppressed:heartbeat_ack`, `nowhere:<why>`. */
  deliveryStatus: string;
  /** OpenClaw's field: a delivery was queued to the outbox (it is sent, and retried, after the answer). */
  deliveryAttempted: boolean;
  /**
   * OpenClaw's field: the reply was handed to its channel's delivery. In hookgate that is the durable outbox (sent,
   * and retried, right after the answer; `hookgate deliveries` shows the outcome), so it is `deliveryAttempted`.
   */
  delivered: boolean;
  /** OpenClaw's field: `delivery-failed` when the reply had to be delivered and could not be (no route). */
  deliveryError?: 'delivery-failed';
  /** OpenClaw's field: why nothing was delivered although `deliver` was on (`heartbeat`: only HEARTBEAT_OK; `empty`). */
  deliverySuppressionReason?: 'heartbeat' | 'empty';
}

export type Completion = PendingCompletion | FinishedCompletion;

export const PENDING: PendingCompletion = Object.freeze({ status: 'pending' });

/**
 * Waiting for a run to end; implemented by the runtime (in-process notification, the store first, a slow poll).
 * Never rejects: whatever goes wrong while waiting is `pending`, because the run itself is already committed.
 */
export interface CompletionWaiters {
  /**
   * The run's completion once it is finished; `pending` when `timeoutMs` passes first, when `signal` aborts (the
   * caller went away), or at once when too many callers are waiting already or the process is stopping.
   */
  wait(runId: string, timeoutMs: number, signal: AbortSignal): Promise<Completion>;
}

/** What a request that waits brings to `dispatch`. */
export interface CompletionWait {
  completions: CompletionWaiters;
  /** Aborted when the caller's connection closes. */
  signal: AbortSignal;
}

/** Beyond the run's own `timeoutSeconds`: time to be claimed, to commit its end and to notice it. */
export const WAIT_GRACE_SECONDS = 5;

/** How long to hold the answer: the run's bound plus the grace, at most `hooks.maxWaitSeconds`. */
export function waitBoundMs(ctx: HooksContext, runTimeoutSeconds: number): number {
  return Math.min(runTimeoutSeconds + WAIT_GRACE_SECONDS, ctx.config.hooks.maxWaitSeconds) * 1000;
}
