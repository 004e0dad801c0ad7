import type { Logger } from '../log.js';
import { type ClusterStore, NODE_REFRESH_MS, type NodeInfo } from '../store/types.js';
import { OutageLog } from './outage.js';

export interface NodeRegistryOptions {
  store: Pick<ClusterStore, 'registerNode' | 'removeNode'>;
  logger: Logger;
  /** This node, as `hookgate nodes` shows it (`lastSeenAt` is set at each refresh). */
  node: Omit<NodeInfo, 'lastSeenAt'>;
  refreshMs?: number;
  now?: () => number;
}

export interface NodeRegistration {
  /** Stop refreshing and remove this node's row (a clean stop); a failure is logged, never thrown. */
  stop(): Promise<void>;
}

/**
 * This node's row in the node registry (`hookgate nodes`): registered at start, its `lastSeenAt` refreshed every
 * `NODE_REFRESH_MS`, removed at a clean stop (a killed node's row stays, and is shown as gone once not seen for
 * `NODE_LIVE_MS`). The registry is informative: a store that fails is logged once per outage and tried again at the
 * next tick; it never stops the node from starting or serving.
 */
export function startNodeRegistry(opts: NodeRegistryOptions): NodeRegistration {
  const { store, logger, node } = opts;
  const now = opts.now ?? Date.now;
  const outage = new OutageLog(logger, 'refreshing this node in the node registry', now);
  let inFlight: Promise<void> | undefined;
  let stopped = false;
  const refresh = () => {
    if (inFlight || stopped) return; // a store that hangs does not pile up writes
    inFlight = store
      .registerNode({ ...node, lastSeenAt: now() })
      .then(
        () => outage.succeeded(),
        (err) => void outage.failed(err, { nodeId: node.id }),
      )
      .finally(() => (inFlight = undefined));
  };
  refresh();
  const timer = setInterval(refresh, opts.refreshMs ?? NODE_REFRESH_MS);
  timer.unref();
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await inFlight; // a refresh landing after the removal would bring the row back
      try {
        await store.removeNode(node.id);
      } catch (err) {
        logger.warn(
          { nodeId: node.id, code: (err as { code?: unknown }).code ?? 'error' },
          'could not remove this node from the node registry; it shows as gone once not seen for a while',
        );
      }
    },
  };
}
