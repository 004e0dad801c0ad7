import type { ChannelRegistry } from '../channels/registry.js';
import type { FeedSink } from '../feed.js';
import type { Config } from '../config/load.js';
import type { ModelCatalog } from '../config/model-catalog.js';
import type { Logger } from '../log.js';
import type { ModelProvider } from '../providers/types.js';
import type { ClusterStore, RuntimeStore } from '../store/types.js';

export { MAIN_SESSION_KEY } from '../store/types.js';

/** What the runtime works with: swapped as a whole when the config reloads. */
export interface RuntimeEnv {
  config: Config;
  catalog: ModelCatalog;
  providers: Map<string, ModelProvider>;
  channels: ChannelRegistry;
  defaultAgentId: string;
}

/** The runtime's store: its role, and the cluster seams it uses (heartbeat leases, notices). */
export type RuntimeClusterStore = RuntimeStore &
  Pick<ClusterStore, 'shared' | 'leaseHeartbeat' | 'releaseHeartbeat' | 'subscribe' | 'outboxSpare'>;

export interface RuntimeDeps {
  store: RuntimeClusterStore;
  logger: Logger;
  /** Unique per process: leases are held in its name. */
  owner: string;
  env: () => RuntimeEnv;
  /** The live feed: run, delivery and heartbeat changes are announced on it (announce.ts). */
  feed?: FeedSink;
  /** Whether the ingress is saturated: the run worker and the outbox then yield the core (claim-loop.ts). */
  ingressBusy?: () => boolean;
}
