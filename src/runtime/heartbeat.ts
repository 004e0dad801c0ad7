import type { Logger } from '../log.js';
import { backoffMs } from '../backoff.js';
import { Abort, deadline, following } from '../deadline.js';
import { newId } from '../ids.js';
import { errorMessage, logSafe } from '../text-safe.js';
import { RuntimeAnnouncer } from './announce.js';
import { type DeliveryPlan, planDelivery } from './delivery-plan.js';
import { MAIN_SESSION_KEY, type RuntimeDeps } from './env.js';
import { LeaseKeeper, leaseLost, storeUnavailable, writeWhileLeased } from './lease-keeper.js';
import { OUTAGE_BACKOFF, OutageLog } from './outage.js';
import { heartbeatPrompt } from './prompt.js';
import { agentTimeoutSeconds, runTurn } from './turn.js';

/** Requests within this window make one heartbeat. */
export const HEARTBEAT_COALESCE_MS = 250;
/** Transcript turns a heartbeat reads back: retention keeps at least these per session (pruner.ts). */
export const HISTORY_TURNS = 20;
/** A failed turn's retry: 5 s doubling, at most 5 min, jittered like every other retry wait. */
const RETRY_BACKOFF = { baseDelayMs: 5_000, maxDelayMs: 5 * 60_000 };

/** The heartbeat's log word for each delivery plan (a heartbeat always delivers, so deliver_false cannot occur). */
const HEARTBEAT_OUTCOMES: Readonly<Record<DeliveryPlan['status'], string>> = {
  // Queued, not delivered: the outbox sends it later, and may dead-letter it (logged there with the heartbeat id).
  outbox: 'queued',
  'suppressed:heartbeat_ack': 'acknowledged',
  'suppressed:deliver_false': 'suppressed:deliver_false',
  'nowhere:no_route': 'nowhere:no_route',
};

/**
 * The lease of a session's heartbeat (one turn at a time per session, cluster-wide), renewed every third of it while
 * the turn runs. 30 s, like a run's: a node that dies mid-turn keeps the session's events waiting at most that long
 * (they stay pending, never lost), and a store outage of about 20 s is ridden out before the turn is given up.
 */
export const HEARTBEAT_LEASE_MS = 30_000;
/** Another node beats the session now: ask for the lease again after 1–2 s (jittered) while the request stands. */
const BUSY_RETRY_MS = 1_000;

/** What the heartbeats of one runtime share: the lease keeper (one timer for all sessions) and the outage log. */
export interface HeartbeatShared {
  leases: LeaseKeeper;
  outage: OutageLog;
}

export function heartbeatShared(deps: RuntimeDeps, leaseMs = HEARTBEAT_LEASE_MS): HeartbeatShared {
  const { store, owner } = deps;
  return {
    leases: new LeaseKeeper({
      label: 'heartbeat lease',
      logger: deps.logger,
      leaseMs,
      renew: async (keys, until) => {
        const ok = await Promise.all(keys.map((key) => store.leaseHeartbeat(key, owner, until - leaseMs, leaseMs)));
        return keys.filter((_, i) => !ok[i]);
      },
    }),
    outage: new OutageLog(deps.logger, 'heartbeat'),
  };
}

/** The wait before the heartbeat after `failures` failed turns in a row. */
export function heartbeatRetryDelayMs(failures: number, random: () => number = Math.random): number {
  return backoffMs(failures, RETRY_BACKOFF, random);
}

export interface HeartbeatOptions {
  /** The wait after `failures` failed turns in a row (default `heartbeatRetryDelayMs`; tests shorten it). */
  retryDelayMs?: (failures: number) => number;
  /** The session served; default the main session. */
  sessionKey?: string;
  /** Beat every `heartbeat.every` (default true; the heartbeats of extra sessions beat on request only). */
  periodic?: boolean;
  /** Called on each periodic tick, after this session's own request (session-heartbeats.ts sweeps the other sessions). */
  onPeriodic?: () => void;
  /** Called when a beat ended and nothing else is scheduled. */
  onIdle?: () => void;
  /** Shared with the runtime's other heartbeats (session-heartbeats.ts); default: this heartbeat's own, closed with it. */
  shared?: HeartbeatShared;
}

/**
 * The main agent's heartbeat: every `heartbeat.every`, and on request (a `now` wake, a finished run with
 * `wakeMode: now`), coalesced over 250 ms, never two at once. It runs the main agent with every pending system
 * event in the prompt; only when the turn finished are the events marked consumed, in the same transaction that
 * queues the reply for delivery — so a crash mid-turn replays them. A heartbeat with nothing pending does not call
 * the model. A failed turn leaves the events pending and tries again with backoff and jitter.
 *
 * Cluster-wide, a turn holds the session's heartbeat lease (`leaseHeartbeat`) from before it reads the events until
 * it committed: a refused lease (another node beats the session) is asked for again shortly, and that retry then
 * usually finds nothing pending. A lease that cannot be renewed aborts the turn uncompleted (its events stay pending
 * for whoever holds the lease). A store outage pauses the beats with backoff, logged once per outage.
 */
export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;
  private periodic: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** Set by a failed turn: the next beat waits this long (backoff), instead of the coalescing delay. */
  private retryDelay: number | undefined;
  private stopping = false;
  private failures = 0;
  private readonly abort = new Abort();
  private reasons = new Set<string>();

  private readonly retryDelayMs: (failures: number) => number;
  /** The session this heartbeat serves: the main session, or one a wake named (see session-heartbeats.ts). */
  readonly sessionKey: string;
  private readonly periodicEnabled: boolean;
  private readonly onPeriodic: (() => void) | undefined;
  private readonly onIdle: (() => void) | undefined;
  private readonly shared: HeartbeatShared;
  private readonly ownsShared: boolean;
  private readonly announce: RuntimeAnnouncer;

  constructor(
    private readonly deps: RuntimeDeps,
    options: HeartbeatOptions = {},
  ) {
    this.retryDelayMs = options.retryDelayMs ?? ((failures) => heartbeatRetryDelayMs(failures));
    this.sessionKey = options.sessionKey ?? MAIN_SESSION_KEY;
    this.periodicEnabled = options.periodic ?? true;
    this.onPeriodic = options.onPeriodic;
    this.onIdle = options.onIdle;
    this.ownsShared = !options.shared;
    this.shared = options.shared ?? heartbeatShared(deps);
    this.announce = new RuntimeAnnouncer(deps.feed);
  }

  /** Start the periodic heartbeat, and run one now if events are already pending (e.g. after a restart). */
  async start(): Promise<void> {
    this.schedulePeriodic();
    const pending = await this.deps.store.pendingEvents(this.sessionKey, 1);
    if (pending.length) this.request('startup');
  }

  /** Nothing scheduled or running: an extra session's heartbeat may be dropped. */
  get idle(): boolean {
    return !this.running && !this.timer;
  }

  /** The config changed: `heartbeat.every` may differ. */
  reconfigure(): void {
    this.schedulePeriodic();
  }

  private schedulePeriodic(): void {
    clearInterval(this.periodic);
    const every = this.deps.env().config.heartbeat.every;
    if (every > 0 && this.periodicEnabled) {
      this.periodic = setInterval(() => {
        this.request('interval');
        this.onPeriodic?.();
      }, every);
      this.periodic.unref();
    }
  }

  request(reason: string, delayMs = HEARTBEAT_COALESCE_MS): void {
    if (this.stopping) return;
    this.reasons.add(reason);
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const reasons = [...this.reasons];
      this.reasons.clear();
      this.running = this.beat(reasons)
        .catch((err) => {
          // Not a store outage (those back off inside beat): a bug; logged, and tried again like a failed turn.
          this.failures++;
          this.retryDelay = this.retryDelayMs(this.failures);
          this.deps.logger.error(
            { sessionKey: this.sessionKey, err: logSafe(errorMessage(err)), retryInMs: this.retryDelay },
            'heartbeat failed; events stay pending',
          );
        })
        .finally(() => {
          this.running = undefined;
          const retry = this.retryDelay;
          this.retryDelay = undefined;
          if (retry !== undefined) {
            // A failed turn: back off, whatever else asked meanwhile (the events are still pending either way).
            this.again = false;
            this.request('retry', retry);
          } else if (this.again) {
            this.again = false;
            this.request('again');
          } else {
            this.onIdle?.();
          }
        });
    }, delayMs);
  }

  /** One beat: take the session's lease, run the turn under it, give it back; store failures back off. */
  private async beat(reasons: string[]): Promise<void> {
    const { store, owner } = this.deps;
    const key = this.sessionKey;
    const { leases, outage } = this.shared;
    try {
      // A read first: an idle beat (the periodic one, on every node) writes nothing, not even a lease.
      if ((await store.pendingEvents(key, 1)).length === 0) return outage.succeeded();
      const now = Date.now();
      if (!(await store.leaseHeartbeat(key, owner, now, leases.leaseMs))) {
        outage.succeeded();
        this.retryDelay = BUSY_RETRY_MS + Math.round(Math.random() * BUSY_RETRY_MS);
        this.deps.logger.debug(
          { sessionKey: key, retryInMs: this.retryDelay },
          'heartbeat: another node beats this session now; asking again shortly',
        );
        return;
      }
      outage.succeeded();
      // Aborted when the lease cannot be kept, or by the stop (it follows this heartbeat's abort).
      const lease = following(this.abort);
      leases.hold(key, now + leases.leaseMs, (err) => lease.abort(err));
      try {
        await this.turn(reasons, lease);
      } finally {
        leases.release(key);
        lease.dispose();
        // Best-effort: a release that fails leaves a lease that lapses by itself within HEARTBEAT_LEASE_MS.
        await store.releaseHeartbeat(key, owner).catch(() => {});
      }
    } catch (err) {
      if (this.abort.aborted) return;
      if (!storeUnavailable(err)) throw err;
      this.retryDelay = outage.failed(err, { sessionKey: key });
    }
  }

  private async turn(reasons: string[], lease: Abort): Promise<void> {
    const { store, logger } = this.deps;
    const env = this.deps.env();
    const events = await store.pendingEvents(this.sessionKey);
    if (events.length === 0) return;

    const agentId = env.defaultAgentId;
    const heartbeatId = newId();
    // Every line of this heartbeat carries its id (and its session); each heartbeat logs at least one.
    const log = logger.child({ heartbeatId, sessionKey: this.sessionKey });
    const started = Date.now();
    const prompt = heartbeatPrompt(events, env.config.heartbeat.prompt, new Date(started));
    const history = (await store.sessionMessages(agentId, this.sessionKey, HISTORY_TURNS)).map((m) => ({
      role: m.role,
      content: m.content,
    }));
    const timeoutSeconds = agentTimeoutSeconds(env, agentId);
    const limit = deadline(
      lease,
      timeoutSeconds * 1000,
      () => new DOMException(`the heartbeat's timeout of ${timeoutSeconds} s passed`, 'TimeoutError'),
      { unref: true },
    );

    let reply: string;
    try {
      reply = (
        await runTurn(env, {
          agentId,
          model: null,
          thinking: null,
          messages: [...history, { role: 'user', content: prompt }],
          signal: limit,
        })
      ).text;
    } catch (err) {
      if (this.abort.aborted) return; // stopping: the events stay pending for the next start
      if (leaseLost(lease)) return this.dropLost(log, events.length, lease);
      this.failures++;
      const delay = this.retryDelayMs(this.failures);
      log.error(
        { events: events.length, retryInMs: delay, err: logSafe(errorMessage(err)) },
        'heartbeat turn failed; events stay pending',
      );
      this.announce.heartbeat(this.sessionKey, 'failed', events.length);
      this.retryDelay = delay;
      return;
    } finally {
      limit.dispose();
    }
    this.failures = 0;
    if (leaseLost(lease)) return this.dropLost(log, events.length, lease);

    const finished = Date.now();
    const plan = planDelivery({
      reply,
      deliver: true,
      ackMaxChars: env.config.heartbeat.ackMaxChars,
      channel: 'last',
      to: null,
      accountId: null,
      lastRoute: await store.getRoute(this.sessionKey),
      defaultRoute: env.config.channels.default,
      id: newId(),
      origin: { runId: null, heartbeatId, sessionKey: this.sessionKey, agentId, hookName: null },
      at: finished,
    });
    const deliveries = plan.delivery ? [plan.delivery] : [];
    const outcome = HEARTBEAT_OUTCOMES[plan.status];
    if (plan.status === 'nowhere:no_route') {
      log.warn(
        'heartbeat reply delivered nowhere: no route (the main session has no route and channels.default is not set)',
      );
    }
    await writeWhileLeased(
      lease,
      () =>
        store.completeHeartbeat({
          heartbeatId,
          sessionKey: this.sessionKey,
          eventIds: events.map((e) => e.id),
          consumedAt: finished,
          deliveries,
          messages: [
            { sessionKey: this.sessionKey, agentId, role: 'user', content: prompt, runId: null, createdAt: started },
            {
              sessionKey: this.sessionKey,
              agentId,
              role: 'assistant',
              content: reply,
              runId: null,
              createdAt: finished,
            },
          ],
        }),
      (n) => backoffMs(n, OUTAGE_BACKOFF),
    );
    log.info({ events: events.length, reasons, outcome, ms: finished - started }, 'heartbeat finished');
    this.announce.heartbeat(this.sessionKey, 'ok', events.length);
    this.announce.queued(deliveries);
    if (deliveries.length) this.onDelivery?.();
  }

  /** The lease was lost mid-turn: the reply is dropped, the events stay pending; asked again after a backoff. */
  private dropLost(log: Logger, events: number, lease: Abort): void {
    this.retryDelay = backoffMs(1, OUTAGE_BACKOFF);
    log.warn(
      { events, code: 'lease_lost', why: errorMessage(lease.reason) },
      'heartbeat turn aborted: its lease could not be kept; not completed, its events stay pending',
    );
  }

  /** Told when a heartbeat queued a delivery. */
  onDelivery: (() => void) | undefined;

  /** Schedule no more beats. */
  stop(): void {
    this.stopping = true;
    clearTimeout(this.timer);
    clearInterval(this.periodic);
  }

  /** A turn under way: true while the model is working for this session. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  /** Stop; a turn under way goes on until `deadline` aborts it (its events then stay pending for the next start). */
  async drain(deadline: AbortSignal): Promise<void> {
    this.stop();
    const abort = () => this.abort.abort();
    if (deadline.aborted) abort();
    else deadline.addEventListener('abort', abort, { once: true });
    await this.running;
    deadline.removeEventListener('abort', abort);
    if (this.ownsShared) this.shared.leases.close();
  }

  close(): Promise<void> {
    return this.drain(AbortSignal.abort());
  }
}
