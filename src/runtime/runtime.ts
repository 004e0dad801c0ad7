import type { CompletionWaiters } from '../hooks/completion.js';
import type { RuntimeSignals } from '../hooks/dispatch.js';
import { RuntimeAnnouncer } from './announce.js';
import { CompletionWaiterRegistry } from './completions.js';
import { MAIN_SESSION_KEY, type RuntimeDeps } from './env.js';
import { drainWithin } from './claim-loop.js';
import { SessionHeartbeats } from './session-heartbeats.js';
import { Outbox } from './outbox.js';
import { RunWorker } from './run-worker.js';
import type { Delivery, SessionRoute } from '../store/types.js';
import { logSafe } from '../text-safe.js';

/** How long running turns get to finish when the runtime closes without a deadline of its own (tests, embedding). */
const DEFAULT_STOP_GRACE_MS = 5000;

export interface Runtime {
  /** What the ingress calls after a commit; `deliveriesQueued` is the admin API's (a dead delivery retried). */
  signals: RuntimeSignals & { deliveriesQueued(deliveries?: readonly Delivery[]): void };
  /** What the ingress waits on for `waitForCompletion`. */
  completions: CompletionWaiters;
  /** Answer every held `waitForCompletion` request now (`pending`): the process is stopping. */
  releaseWaiters(): void;
  /** The config was reloaded (RuntimeEnv swapped): pick up new timings. */
  reconfigure(): void;
  /** What is being worked on now: agent runs, heartbeat turns, deliveries being sent. */
  load(): { runs: number; heartbeats: number; deliveries: number };
  /** Claim no more runs or deliveries and schedule no more heartbeats, at once. */
  stopClaiming(): void;
  /**
   * Stop claiming, and wait for the work in hand; when `deadline` aborts, the rest is aborted: runs go back to the
   * queue (not failed), heartbeat events stay pending, deliveries are sent again at the next start.
   */
  drain(deadline: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/**
 * Heartbeats (one per session with pending events), run worker and outbox over one store. A finished run with
 * `wakeMode: now` requests a heartbeat (its summary is already a pending event); finished runs and heartbeats wake
 * the outbox, and answer the callers that wait for them.
 */
export async function startRuntime(deps: RuntimeDeps): Promise<Runtime> {
  const heartbeat = new SessionHeartbeats(deps);
  const announce = new RuntimeAnnouncer(deps.feed);
  const outbox = new Outbox(deps);
  const completions = new CompletionWaiterRegistry({
    store: deps.store,
    logger: deps.logger,
    ackMaxChars: () => deps.env().config.heartbeat.ackMaxChars,
  });
  // On a store whose writes commit in queue order (no claim round trips: SQLite), a loop is told as the write that
  // makes its work is queued: its claim rides that write's commit instead of taking a commit of its own after it.
  const toldBehind = (notify: () => void): boolean => {
    if (deps.store.claimRoundTrip) return false;
    notify();
    return true;
  };
  const worker = new RunWorker(deps, {
    onFinishing: (deliveries) => toldBehind(() => outbox.notify(deliveries)),
    onFinished(run, committed, deliveries, told) {
      if (!committed) return;
      completions.finished(run.id);
      // Only when it queued a delivery (a run with `deliver: false` queues none: a claim would find nothing).
      if (deliveries.length && !told) outbox.notify(deliveries);
      if (run.wakeMode === 'now') heartbeat.request(`hook:${run.id}`);
    },
  });
  heartbeat.onDelivery = () => outbox.notify();
  // A finished run's deliveries go to this node's own outbox (onFinished): the others need not look while it has room.
  deps.store.outboxSpare?.(() => outbox.spare);
  // Other nodes on a shared store say when they made work claimable: look now rather than at the next poll (the
  // claim loops still poll every second, which covers a lost notice). A single-process store sends none.
  const unsubscribe = deps.store.subscribe((notice) => {
    if (notice.kind === 'runs') worker.notify();
    else if (notice.kind === 'deliveries') outbox.notify();
  });
  await heartbeat.start().catch((err) => {
    unsubscribe();
    throw err;
  });
  worker.notify();
  outbox.notify();
  await sayMainRoute(deps);
  const runtime: Runtime = {
    signals: {
      heartbeatRequested: (reason, sessionKey) => heartbeat.request(reason, sessionKey),
      runsAccepting: () => toldBehind(() => worker.notify()),
      runsQueued: (runs, claimed) => {
        for (const run of runs ?? []) announce.run(run, 'queued');
        if (!claimed) worker.notify();
      },
      deliveriesQueued: (deliveries) => {
        for (const d of deliveries ?? []) announce.delivery(d, 'queued', d.state, d.attempts, d.lastError);
        outbox.notify();
      },
    },
    completions,
    releaseWaiters: () => completions.close(),
    reconfigure: () => heartbeat.reconfigure(),
    load: () => ({ runs: worker.running, heartbeats: heartbeat.busy, deliveries: outbox.sending }),
    stopClaiming() {
      unsubscribe();
      worker.stop();
      heartbeat.stop();
      outbox.stop();
    },
    async drain(deadline) {
      runtime.stopClaiming();
      await Promise.all([worker.drain(deadline), heartbeat.drain(deadline), outbox.drain(deadline)]);
    },
    close() {
      completions.close();
      return drainWithin(DEFAULT_STOP_GRACE_MS, (deadline) => runtime.drain(deadline));
    },
  };
  return runtime;
}

/**
 * Says at start where the main agent's replies go (docs/operations.md, "Where replies go"): the route in the store,
 * whoever wrote it, is what an operator should recognise; `hookgate sessions route` changes it.
 */
async function sayMainRoute({ store, logger, env }: RuntimeDeps): Promise<void> {
  let route: SessionRoute | undefined;
  try {
    route = await store.getRoute(MAIN_SESSION_KEY);
  } catch {
    return; // A store that cannot be read now does not stop the start: the heartbeat reads the route when it replies.
  }
  const fallback = env().config.channels.default;
  const where = route
    ? {
        route: logSafe(`${route.channel}:${route.to}`, 200),
        accountId: route.accountId,
        setBy: 'hookgate sessions route',
      }
    : fallback && {
        route: logSafe(fallback.to ? `${fallback.channel}:${fallback.to}` : fallback.channel, 200),
        setBy: 'channels.default',
      };
  if (where)
    logger.info(
      where,
      "the main agent's replies (heartbeats, `channel: last`) go to this route; `hookgate sessions show main` shows it, `hookgate sessions route main` sets it",
    );
  else
    logger.info(
      "the main agent's replies (heartbeats, `channel: last`) go nowhere: no route and no channels.default; `hookgate sessions route main` sets one",
    );
}
