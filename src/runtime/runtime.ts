import type { RuntimeSignals } from '../hooks/dispatch.js';
import type { RuntimeDeps } from './env.js';
import { Heartbeats } from './heartbeats.js';
import { Outbox } from './outbox.js';
import { RunWorker } from './run-worker.js';

export interface Runtime {
  /** What the ingress calls after a commit. */
  signals: RuntimeSignals;
  /** The config was reloaded (RuntimeEnv swapped): pick up new timings. */
  reconfigure(): void;
  close(): Promise<void>;
}

/**
 * Heartbeats (one per session with pending events), run worker and outbox over one store. A finished run with `wakeMode: now` requests a heartbeat (its
 * summary is already a pending event); finished runs and heartbeats wake the outbox.
 */
export async function startRuntime(deps: RuntimeDeps): Promise<Runtime> {
  const heartbeat = new Heartbeats(deps);
  const outbox = new Outbox(deps);
  const worker = new RunWorker(deps, {
    onFinished(run, committed) {
      if (!committed) return;
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
    reconfigure: () => heartbeat.reconfigure(),
    async close() {
      await worker.close();
      await heartbeat.close();
      await outbox.close();
    },
  };
}
