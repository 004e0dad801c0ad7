import { backoffMs } from '../backoff.js';
import { newId } from '../ids.js';
import { errorMessage, logSafe } from '../text-safe.js';
import { type DeliveryPlan, planDelivery } from './delivery-plan.js';
import { MAIN_SESSION_KEY, type RuntimeDeps } from './env.js';
import { heartbeatPrompt } from './prompt.js';
import { agentTimeoutSeconds, runTurn } from './turn.js';

/** Requests within this window make one heartbeat. */
export const HEARTBEAT_COALESCE_MS = 250;
const HISTORY_TURNS = 20;
/** A failed turn's retry: 5 s doubling, at most 5 min, jittered like every other retry wait. */
const RETRY_BACKOFF = { baseDelayMs: 5_000, maxDelayMs: 5 * 60_000 };

/** The heartbeat's log word for each delivery plan (a heartbeat always delivers, so deliver_false cannot occur). */
const HEARTBEAT_OUTCOMES: Readonly<Record<DeliveryPlan['status'], string>> = {
  outbox: 'delivered',
  'suppressed:heartbeat_ack': 'acknowledged',
  'suppressed:deliver_false': 'suppressed:deliver_false',
  'nowhere:no_route': 'nowhere:no_route',
};

/** The wait before the heartbeat after `failures` failed turns in a row. */
export function heartbeatRetryDelayMs(failures: number, random: () => number = Math.random): number {
  return backoffMs(failures, RETRY_BACKOFF, random);
}

/**
 * The main agent's heartbeat: every `heartbeat.every`, and on request (a `now` wake, a finished run with
 * `wakeMode: now`), coalesced over 250 ms, never two at once. It runs the main agent with every pending system
 * event in the prompt; only when the turn finished are the events marked consumed, in the same transaction that
 * queues the reply for delivery — so a crash mid-turn replays them. A heartbeat with nothing pending does not call
 * the model. A failed turn leaves the events pending and tries again with backoff and jitter.
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
  private readonly abort = new AbortController();
  private reasons = new Set<string>();

  private readonly retryDelayMs: (failures: number) => number;

  /** `retryDelayMs`: the wait after `failures` failed turns in a row (default `heartbeatRetryDelayMs`; tests shorten it). */
  constructor(
    private readonly deps: RuntimeDeps,
    options: { retryDelayMs?: (failures: number) => number } = {},
  ) {
    this.retryDelayMs = options.retryDelayMs ?? ((failures) => heartbeatRetryDelayMs(failures));
  }

  /** Start the periodic heartbeat, and run one now if events are already pending (e.g. after a restart). */
  async start(): Promise<void> {
    this.schedulePeriodic();
    const pending = await this.deps.store.pendingEvents(MAIN_SESSION_KEY, 1);
    if (pending.length) this.request('startup');
  }

  /** The config changed: `heartbeat.every` may differ. */
  reconfigure(): void {
    this.schedulePeriodic();
  }

  private schedulePeriodic(): void {
    clearInterval(this.periodic);
    const every = this.deps.env().config.heartbeat.every;
    if (every > 0) {
      this.periodic = setInterval(() => this.request('interval'), every);
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
      this.running = this.beat(reasons).finally(() => {
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
        }
      });
    }, delayMs);
  }

  private async beat(reasons: string[]): Promise<void> {
    const { store, logger } = this.deps;
    const env = this.deps.env();
    const events = await store.pendingEvents(MAIN_SESSION_KEY);
    if (events.length === 0) return;

    const agentId = env.defaultAgentId;
    const heartbeatId = newId();
    const started = Date.now();
    const prompt = heartbeatPrompt(events, env.config.heartbeat.prompt, new Date(started));
    const history = (await store.sessionMessages(agentId, MAIN_SESSION_KEY, HISTORY_TURNS)).map((m) => ({ role: m.role, content: m.content }));
    const signal = AbortSignal.any([AbortSignal.timeout(agentTimeoutSeconds(env, agentId) * 1000), this.abort.signal]);

    let reply: string;
    try {
      reply = (await runTurn(env, { agentId, model: null, thinking: null, messages: [...history, { role: 'user', content: prompt }], signal })).text;
    } catch (err) {
      if (this.abort.signal.aborted) return; // stopping: the events stay pending for the next start
      this.failures++;
      const delay = this.retryDelayMs(this.failures);
      logger.error({ heartbeatId, events: events.length, retryInMs: delay, err: logSafe(errorMessage(err)) }, 'heartbeat turn failed; events stay pending');
      this.retryDelay = delay;
      return;
    }
    this.failures = 0;

    const finished = Date.now();
    const plan = planDelivery({
      reply,
      deliver: true,
      ackMaxChars: env.config.heartbeat.ackMaxChars,
      channel: 'last',
      to: null,
      accountId: null,
      lastRoute: await store.getRoute(MAIN_SESSION_KEY),
      defaultRoute: env.config.channels.default,
      id: newId(),
      origin: { runId: null, heartbeatId, sessionKey: MAIN_SESSION_KEY, agentId, hookName: null },
      at: finished,
    });
    const deliveries = plan.delivery ? [plan.delivery] : [];
    const outcome = HEARTBEAT_OUTCOMES[plan.status];
    if (plan.status === 'nowhere:no_route') {
      logger.warn({ heartbeatId }, 'heartbeat reply delivered nowhere: no route (no last route of the main session and no channels.default)');
    }
    await store.completeHeartbeat({
      heartbeatId,
      sessionKey: MAIN_SESSION_KEY,
      eventIds: events.map((e) => e.id),
      consumedAt: finished,
      deliveries,
      messages: [
        { sessionKey: MAIN_SESSION_KEY, agentId, role: 'user', content: prompt, runId: null, createdAt: started },
        { sessionKey: MAIN_SESSION_KEY, agentId, role: 'assistant', content: reply, runId: null, createdAt: finished },
      ],
    });
    logger.info({ heartbeatId, events: events.length, reasons, outcome, ms: finished - started }, 'heartbeat finished');
    if (deliveries.length) this.onDelivery?.();
  }

  /** Told when a heartbeat queued a delivery. */
  onDelivery: (() => void) | undefined;

  async close(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    clearInterval(this.periodic);
    this.abort.abort();
    await this.running;
  }
}
