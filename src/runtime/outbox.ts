import type { Logger } from '../log.js';
import { backoffMs } from '../backoff.js';
import { type Abort, deadline } from '../deadline.js';
import { splitText } from './split.js';
import { recipientProblem } from '../channels/recipients.js';
import type { Channel, OutboundMessage, SendResult } from '../channels/types.js';
import type { ChannelsConfig } from '../config/schema/channels.js';
import type { Delivery, DeliveryOutcome, NewDelivery } from '../store/types.js';
import { logSafe } from '../text-safe.js';
import { RuntimeAnnouncer } from './announce.js';
import { ClaimLoop } from './claim-loop.js';
import type { RuntimeDeps } from './env.js';
import { LeaseLostError, leaseLost, writeWhileLeased } from './lease-keeper.js';
import { OUTAGE_BACKOFF } from './outage.js';
import { errorMessage } from '../text-safe.js';

export const DELIVERY_LEASE_MS = 60_000;
/**
 * A delivery's lease is not renewed (the store has no call for it): a send stops this long before its lease ends,
 * so it is never still sending when another node (or this one) may claim the delivery again and send it twice.
 */
const DELIVERY_LEASE_MARGIN_MS = 10_000;
const POLL_MS = 1000;
/**
 * How many deliveries queued behind a route's head are claimed with it and sent after it, in order, by the same
 * worker: one claim per batch instead of one per delivery (a claim is a write and one of the store's round trips),
 * so the outbox keeps up with the runs that feed one route.
 */
export const DELIVERY_FOLLOWERS = 63;

/** How one delivery of a batch ended: its outcome and that outcome's write (under way); empty when it was not finished here. */
interface Sent {
  kind?: DeliveryOutcome['kind'];
  written?: Promise<void>;
}
/** Not finished here (stopping, the lease running out): sent again once its lease lapses. */
const UNFINISHED: Sent = Object.freeze({});

/**
 * The outcome writes of one batch, started and not waited for (see `sendBatch`). The first that fails stops the
 * batch, and is thrown once every write has settled.
 */
class OutcomeWrites {
  private readonly pending: Promise<void>[] = [];
  private failure: { err: unknown } | undefined;

  add(written: Promise<void>): void {
    this.pending.push(written.catch((err: unknown) => void (this.failure ??= { err })));
  }

  get failed(): boolean {
    return this.failure !== undefined;
  }

  settled(): Promise<unknown> {
    return Promise.all(this.pending);
  }

  throwFailure(): void {
    if (this.failure) throw this.failure.err;
  }
}

type OutboxLimits = ChannelsConfig['outbox'];

/** One route's deliveries in one claim (its head first), sent one after another. */
interface DeliveryBatch {
  id: string;
  route: string;
  /** Until when its rows may be worked on: their leases' end (they were claimed together), less the margin. */
  until: number;
  rows: Delivery[];
}

/** A recipient: what the outbox keeps in order (channel, account, recipient as stored). */
const routeKey = (d: Pick<NewDelivery, 'channel' | 'accountId' | 'to'>): string =>
  `${d.channel}\u0000${d.accountId ?? ''}\u0000${d.to}`;

/**
 * Sends the outbox: each delivery row through its channel, chunk by chunk (split at the channel's size limit;
 * progress is recorded so a retry resumes after the chunks already accepted), in order per recipient. Retryable
 * failures wait as long as the platform's Retry-After asks, else with exponential backoff and jitter
 * ({@link deliveryRetryDelayMs}); after `channels.outbox.maxAttempts`, or at once for a permanent failure, the
 * delivery is dead-lettered: logged with its run id, visible in `hookgate deliveries list --failed`, and retryable
 * from there. A failed delivery is never reported as a success.
 */
export class Outbox {
  private readonly loop: ClaimLoop<DeliveryBatch>;
  /** Deliveries in hand not yet sent nor given back (`sending`). */
  private unsent = 0;
  /** The routes of the batches in hand: a new delivery to one of them is claimed when its batch ends. */
  private readonly routesInHand = new Set<string>();
  /** Routes in hand that were queued a delivery meanwhile: the batch's end claims again. */
  private readonly routesOwed = new Set<string>();
  private readonly announce: RuntimeAnnouncer;

  constructor(
    private readonly deps: RuntimeDeps,
    options: { leaseMs?: number; marginMs?: number } = {},
  ) {
    this.announce = new RuntimeAnnouncer(deps.feed);
    const leaseMs = options.leaseMs ?? DELIVERY_LEASE_MS;
    const marginMs = options.marginMs ?? DELIVERY_LEASE_MARGIN_MS;
    this.loop = new ClaimLoop<DeliveryBatch>({
      label: 'deliveries',
      logger: deps.logger,
      idField: 'deliveryId',
      limit: () => deps.env().config.channels.outbox.concurrency,
      claim: async (n) => {
        const now = Date.now();
        const rows = await deps.store.claimDeliveries(deps.owner, now, leaseMs, n, DELIVERY_FOLLOWERS);
        const batches = new Map<string, DeliveryBatch>();
        for (const d of rows) {
          const route = routeKey(d);
          const batch = batches.get(route);
          if (batch) batch.rows.push(d);
          else batches.set(route, { id: d.id, route, until: now + leaseMs - marginMs, rows: [d] });
        }
        this.unsent += rows.length;
        for (const [route, b] of batches) {
          this.routesInHand.add(route);
          // A batch that came with all the followers it may have may have left more behind it: its route is claimed
          // again when it ends. Without this, the rest waited for a delivery queued to the route or the poll: after
          // a burst, 64 deliveries a second per node.
          if (b.rows.length > DELIVERY_FOLLOWERS) this.routesOwed.add(route);
        }
        return [...batches.values()];
      },
      work: (b, stop) =>
        this.sendBatch(b, stop).finally(() => {
          this.routesInHand.delete(b.route);
          if (this.routesOwed.delete(b.route)) this.loop.expect();
        }),
      pollMs: POLL_MS,
      // A batch ending claims again only for what it was told of meanwhile: a claim after every batch found nothing
      // most of the time (its route's followers came with it), and a claim is a write.
      claimAfterWork: 'if-expected',
      ...(deps.ingressBusy ? { ingressBusy: deps.ingressBusy } : {}),
    });
  }

  /**
   * A route's deliveries in order; after one that is not done with (retry later, lease lost, stop) the rest go back.
   * Each delivery's outcome is written without waiting for it before the next one is sent: the writes of a batch
   * share a commit instead of taking one round trip to the store each (a batch would otherwise wait for one commit
   * per delivery). Order is kept: the sends still go one after another. A crash before the outcomes commit sends them
   * again, in order, as a crash between a send and its write always did (at least once, with a stable delivery id).
   * A write that fails stops the batch: what was not sent yet goes back.
   */
  private async sendBatch(b: DeliveryBatch, stop: Abort): Promise<void> {
    // One lease for the batch: its rows were claimed together, so their leases end together. Aborted by the stop, or
    // when the lease is about to run out; kept until the outcomes' writes settle (one retried through a store outage
    // stops with it).
    const lease = deadline(
      stop,
      Math.max(0, b.until - Date.now()),
      () => new LeaseLostError(`the delivery lease of ${b.id} is about to run out`),
      { unref: true },
    );
    const writes = new OutcomeWrites();
    try {
      for (let i = 0; i < b.rows.length; i++) {
        let sent: Sent;
        try {
          sent = await this.leased(b.rows[i]!, lease, stop);
        } catch (err) {
          await this.giveBack(b.rows, i + 1);
          throw err;
        }
        if (sent.written) writes.add(sent.written);
        // A failed write is seen here, after the send it came during (the only await of a round that goes on). A
        // retry, or no outcome (stop, lease), holds the rest back too: they are sent after it, in order.
        if (writes.failed || !(sent.kind === 'delivered' || sent.kind === 'dead')) {
          await this.giveBack(b.rows, i + 1);
          break;
        }
      }
    } finally {
      await writes.settled();
      lease.dispose();
    }
    // The claim loop logs it, as it did when each write was waited for.
    writes.throwFailure();
  }

  /** `send` under the batch's lease (`lease`): aborted, and not finished, when the lease is about to run out. */
  private async leased(d: Delivery, lease: Abort, stop: Abort): Promise<Sent> {
    try {
      const sent = await this.send(d, lease);
      if (leaseLost(lease) && !stop.aborted) {
        deliveryLog(this.deps.logger, d).warn(
          { code: 'lease_lost', why: errorMessage(lease.reason) },
          'delivery stopped: its lease ran out before it was sent; it is sent again once the lease lapses (chunks already accepted are not repeated)',
        );
      }
      return sent;
    } finally {
      this.unsent--;
    }
  }

  /** The rows from `from` on, not sent, go back to the queue now rather than when their leases lapse. */
  private async giveBack(rows: readonly Delivery[], from: number): Promise<void> {
    if (from >= rows.length) return;
    const rest = rows.slice(from).map((r) => r.id);
    this.unsent -= rest.length;
    this.loop.expect(); // claimable again (a route held back by a retry is not: its head is not due)
    await this.deps.store
      .releaseDeliveries(this.deps.owner, rest, Date.now())
      .catch((err: unknown) =>
        this.deps.logger.warn(
          { err: errorMessage(err), deliveries: rest.length },
          'could not give back claimed deliveries; their leases lapse instead',
        ),
      );
  }

  /**
   * There may be deliveries to claim. Told which were queued (a run's completion), it claims only if one of them is
   * to a route with no batch in hand: a batch in hand claims its route again when it ends (`routesOwed`), so a claim
   * now would find nothing (an empty claim is still a write, and it would come with every finished run).
   */
  notify(queued?: readonly Pick<NewDelivery, 'channel' | 'accountId' | 'to'>[]): void {
    if (queued?.length && queued.every((d) => this.routesInHand.has(routeKey(d)))) {
      for (const d of queued) this.routesOwed.add(routeKey(d));
      return;
    }
    this.loop.notify();
  }

  /** One delivery through its channel; its outcome is recorded (the write started) before this returns. */
  private async send(d: Delivery, lease: Abort): Promise<Sent> {
    const env = this.deps.env();
    const log = deliveryLog(this.deps.logger, d);
    const dead = (error: string): Sent => {
      log.error({ error }, 'delivery dead-lettered');
      return this.record(d, lease, { kind: 'dead', error, at: Date.now() });
    };
    const channel = env.channels.get(d.channel, d.accountId ?? undefined);
    if (!channel) {
      // Gone since the run was accepted (a reload): dead at once, never sent through another account instead.
      return dead(
        env.channels.get(d.channel)
          ? `account "${d.accountId}" of channel "${d.channel}" is not configured (any more); add it back under channels.${d.channel}.accounts and retry the delivery`
          : `channel "${d.channel}" is not configured`,
      );
    }
    // Trimmed here, once, for every channel: a recipient pasted with a space or newline still names the same chat.
    const to = d.to.trim();
    // Checked when the request was accepted; a route stored before that check existed, or set by hand, is checked here.
    const unfit = recipientProblem(d.channel, channel, to);
    if (unfit) return dead(unfit);
    const chunks = splitText(d.text, channel.maxTextLength).filter((c) => c.trim() !== '');
    const outcome = await this.sendChunks(d, to, channel, chunks, lease, env.config.channels.outbox, log);
    if (!outcome) return UNFINISHED;
    const sent = this.record(d, lease, outcome);
    // A delivery never moves the main session's route, explicit or not: where the main agent's replies go is the
    // operator's to decide (docs/security.md, "Who decides where replies go").
    if (outcome.kind === 'delivered') log.info({ chunks: chunks.length }, 'delivered');
    return sent;
  }

  /**
   * The chunks not sent yet, one after another, to the (trimmed, checked) recipient: `delivered`, a `retry` or `dead`
   * outcome on the first failure (logged here), or none when stopping or the lease runs out (the delivery is sent
   * again, next start or any node).
   */
  private async sendChunks(
    d: Delivery,
    to: string,
    channel: Channel,
    chunks: readonly string[],
    lease: Abort,
    limits: OutboxLimits,
    log: Logger,
  ): Promise<DeliveryOutcome | undefined> {
    const { store, owner } = this.deps;
    const createdAt = new Date(d.createdAt).toISOString();
    for (let i = d.chunksSent; i < chunks.length; i++) {
      if (lease.aborted) return undefined;
      // The id is stable per chunk across retries: platforms that take an idempotency id (webhook-id, Discord nonce) dedupe.
      const deliveryId = chunks.length > 1 ? `${d.id}_${i + 1}` : d.id;
      const message: OutboundMessage = {
        deliveryId,
        channel: d.channel,
        to,
        text: chunks[i]!,
        runId: d.runId,
        sessionKey: d.sessionKey,
        agentId: d.agentId,
        hookName: d.hookName,
        createdAt,
      };
      const result = await sendChunk(channel, message, lease.signal);
      if (result.ok) {
        if (i + 1 < chunks.length) await store.deliveryProgress(d.id, owner, i + 1, Date.now());
        continue;
      }
      const error = logSafe(result.error, 300);
      if (lease.aborted) return undefined;
      // Chunks sent before this failure are never sent again.
      if (i > d.chunksSent) await store.deliveryProgress(d.id, owner, i, Date.now());
      if (result.retryable && d.attempts < limits.maxAttempts) {
        const wait = deliveryRetryDelayMs(d.attempts, result.retryAfterMs, limits);
        log.warn({ error, status: result.status, retryInMs: wait }, 'delivery failed; will retry');
        return { kind: 'retry', nextAttemptAt: Date.now() + wait, error };
      }
      log.error({ error, status: result.status }, 'delivery dead-lettered');
      return {
        kind: 'dead',
        error: result.retryable ? `gave up after ${d.attempts} attempts: ${error}` : error,
        at: Date.now(),
      };
    }
    return { kind: 'delivered', at: Date.now() };
  }

  /**
   * Starts the outcome's write, not waited for (see sendBatch); tried again while the store is briefly unreachable,
   * as long as the lease lasts (then the lease lapses instead, and nothing is recorded here).
   */
  private record(d: Delivery, lease: Abort, outcome: DeliveryOutcome): Sent {
    if (leaseLost(lease)) return UNFINISHED;
    const written = writeWhileLeased(
      lease,
      () => this.deps.store.finishDelivery(d.id, this.deps.owner, outcome, Date.now()),
      (n) => backoffMs(n, OUTAGE_BACKOFF),
    ).then(() => {
      if (outcome.kind === 'delivered') this.announce.delivery(d, 'sent', 'delivered', d.attempts, null);
      else if (outcome.kind === 'dead') this.announce.delivery(d, 'failed', 'dead', d.attempts, outcome.error);
      else this.announce.delivery(d, 'retry', 'pending', d.attempts, outcome.error);
    });
    return { kind: outcome.kind, written };
  }

  /** Claim no more deliveries. */
  stop(): void {
    this.loop.stop();
  }

  /** Sends under way go on until `deadline` aborts them; an aborted one is sent again at the next start. */
  drain(deadline: AbortSignal): Promise<void> {
    return this.loop.drain(deadline);
  }

  /** How many more deliveries the outbox would claim now (ClusterStore.outboxSpare). */
  get spare(): number {
    return this.loop.spare;
  }

  /** Deliveries in hand: claimed and not done with (a batch counts each of its rows until it is sent or given back). */
  get sending(): number {
    return this.unsent;
  }

  async close(graceMs = 5000): Promise<void> {
    await this.loop.close(graceMs);
  }
}

/**
 * One chunk through the channel. A throw counts as a retryable failure, whether `send` rejected or threw before
 * returning a promise (a plugin's plain function may do either), and so does an answer that is not a SendResult:
 * either way the delivery is recorded as a retry, not left to come back only when its lease lapses.
 */
async function sendChunk(channel: Channel, message: OutboundMessage, signal: AbortSignal): Promise<SendResult> {
  let result: unknown;
  try {
    result = await channel.send(message, signal);
  } catch (err) {
    return { ok: false, retryable: true, error: `channel threw: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (typeof result === 'object' && result !== null && typeof (result as { ok?: unknown }).ok === 'boolean')
    return result as SendResult;
  return {
    ok: false,
    retryable: true,
    error: 'channel answered without a result: send must resolve to { ok: true } or { ok: false, retryable, error }',
  };
}

/** The shortest wait a platform's hint can ask for: `Retry-After: 0` must not turn the attempts into a busy loop. */
export const MIN_HINTED_WAIT_MS = 1000;

/**
 * The wait before the next attempt of a delivery that failed `attempts` times. When the platform named the wait
 * (`Retry-After`, Telegram's and Discord's `retry_after`) that is the wait: a chat throttled for one second is
 * retried after one second, not after the backoff, so the messages queued behind it to the same recipient are not
 * held back either. The hint is at least `MIN_HINTED_WAIT_MS` and at most `maxBackoffMs` (an HTTP date days away
 * does not park a delivery for days). Without a hint: the jittered exponential backoff from `initialBackoffMs`.
 */
export function deliveryRetryDelayMs(
  attempts: number,
  retryAfterMs: number | undefined,
  limits: { initialBackoffMs: number; maxBackoffMs: number },
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined)
    return Math.min(limits.maxBackoffMs, Math.max(MIN_HINTED_WAIT_MS, Math.ceil(retryAfterMs)));
  return backoffMs(attempts, { baseDelayMs: limits.initialBackoffMs, maxDelayMs: limits.maxBackoffMs }, random);
}

/**
 * The logger of one delivery: every line carries its `deliveryId`, the run or heartbeat whose reply it delivers
 * (`runId`, `heartbeatId`), its channel, account and attempt. One per delivery sent: each logs at least one line.
 */
function deliveryLog(logger: Logger, d: Delivery): Logger {
  return logger.child({
    deliveryId: d.id,
    runId: d.runId,
    heartbeatId: d.heartbeatId,
    channel: d.channel,
    accountId: d.accountId,
    attempt: d.attempts,
  });
}
