import type { RunCompletions } from '../hooks/completion.js';
import type { RuntimeSignals } from '../hooks/dispatch.js';
import { CompletionWaiters } from './completions.js';
import type { RuntimeDeps } from './env.js';
import { Heartbeats } from './heartbeats.js';
import { Outbox } from './outbox.js';
import { RunWorker } from './run-worker.js';

export interface Runtime {
  /** What the ingress calls after a commit. */
  signals: RuntimeSignals;
  /** What the ingress waits on for `waitForCompletion`. */
  completions: RunCompletions;
  /** Answer every held `waitForCompletion` request now (`pending`): the process is stopping. */
  releaseWaiters(): void;
  /** The config was reloaded (RuntimeEnv swapped): pick up new timings. */
  reconfigure(): void;
  close(): Promise<void>;
}

/**
 * Heartbeats (one per session with pending events), run worker and outbox over one store. A finished run with
 * `wakeMode: now` requests a heartbeat (its summary is already a pending event); finished runs and heartbeats wake
 * the outbox, and answer the callers that wait for them.
 */
export async function startRuntime(deps: RuntimeDeps): Promise<Runtime> {
  const heartbeat = new Heartbeats(deps);
  const outbox = new Outbox(deps);
  const completions = new CompletionWaiters({ store: deps.store, logger: deps.logger, ackMaxChars: () => deps.env().config.heartbeat.ackMaxChars });
  const worker = new RunWorker(deps, {
    onFinished(run, committed) {
      if (!committed) return;
      completions.finished(run.id);
      outbox.notify();
      if (run.wakeMode === 'now') heartbeat.request(`hook:${run.id}`);
    },
  });
  heartbeat.onDelivery = () => outbox.notify();
  await heartbeat.start();
  worker.notify();
  outbox.notify();
  return {
    signals: {
      heartbeatRequested: (reason, sessionKey) => heartbeat.request(reason, sessionKey),
      runsQueued: () => worker.notify(),
    },
    completions,
    releaseWaiters: () => completions.close(),
    reconfigure: () => heartbeat.reconfigure(),
    async close() {
      completions.close();
      await worker.close();
      await heartbeat.close();
      await outbox.close();
    },
  };
}
