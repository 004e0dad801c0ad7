/**
 * What several hookgate processes on one store share (docs/reference.md#cluster-on-postgresql): the node registry, the
 * notices between nodes, and the `ClusterStore` role of the store. Part of `Store` (./types.ts re-exports all of it).
 */
import type { FeedEvent } from '../feed.js';

/** How often a running node refreshes its registry row (`lastSeenAt`). */
export const NODE_REFRESH_MS = 5_000;
/** A node not seen for this long is shown as gone (`hookgate nodes`): it was killed, or lost the database. */
export const NODE_LIVE_MS = 30_000;

/** One `hookgate serve` process, as the node registry knows it. */
export interface NodeInfo {
  /** The runtime's lease owner (`host:pid:random`): unique per process. */
  id: string;
  host: string;
  pid: number;
  /** hookgate's version (package.json). */
  version: string;
  /** The hooks listener's URL, as the node itself sees it. */
  url: string;
  startedAt: number;
  lastSeenAt: number;
}

/**
 * What other processes sharing the store tell this one (PostgreSQL: `LISTEN/NOTIFY`), so this node's runtime looks at
 * once instead of at its next poll. A shared driver sends `runs` / `deliveries` in the same transaction as any write
 * that makes runs / deliveries claimable now (an accept, a finished run or heartbeat, a requeue), and `lockout` from
 * `shareLockout`: the address bucket `bucket` is locked out until `until` (epoch ms).
 */
export type ClusterNotice =
  | { kind: 'runs' }
  | { kind: 'deliveries' }
  | { kind: 'lockout'; bucket: string; until: number }
  /**
   * Live feed events announced by node `node` (`publishFeed`), for every node's feed; with `watchMs`,
   * node `node` has live-feed readers and asks the others to send it their events for the next `watchMs` ms.
   */
  | { kind: 'feed'; node: string; events: FeedEvent[]; watchMs?: number };

/** A `feed` notice's payload stays under this (PostgreSQL refuses a NOTIFY payload of 8000 bytes or more). */
export const FEED_NOTICE_MAX_BYTES = 7500;

/**
 * What a driver does for several processes on one store. A single-process driver (SQLite) keeps the same semantics
 * within its one process: heartbeat leases and lockouts in memory, no notices (the process signals itself), and a
 * node registry of the one node.
 */
export interface ClusterStore {
  /** True when other processes may share this store (PostgreSQL): nobody's leases are taken back at start. */
  readonly shared: boolean;
  /**
   * Take (or renew, for the same owner) the lease of `sessionKey`'s heartbeat until `now + leaseMs`; false while
   * another owner's lease has not expired. One heartbeat turn at a time per session, cluster-wide.
   */
  leaseHeartbeat(sessionKey: string, owner: string, now: number, leaseMs: number): Promise<boolean>;
  /** Give the lease back (only the owner's own lease is released). */
  releaseHeartbeat(sessionKey: string, owner: string): Promise<void>;
  /** Record a lockout decided by this node and tell the others (`lockout` notice). Keeps the later `until`. */
  shareLockout(bucket: string, until: number): Promise<void>;
  /** Lockouts still running at `now` (a node starting, or catching up after a missed notice). */
  activeLockouts(now: number): Promise<{ bucket: string; until: number }[]>;
  /** Insert or refresh this node's row (`lastSeenAt`). */
  registerNode(node: NodeInfo): Promise<void>;
  /** This node stops: remove its row. */
  removeNode(id: string): Promise<void>;
  /** Every registered node, most recently seen first (the caller decides which are live by `lastSeenAt`). */
  listNodes(): Promise<NodeInfo[]>;
  /**
   * Be told of other processes' notices until the returned function is called. Delivery is best-effort (a lost
   * connection loses notices while it is down): the runtime also polls, slowly.
   */
  subscribe(listener: (notice: ClusterNotice) => void): () => void;
  /**
   * How many more deliveries this node's outbox would claim now (`spare`, asked as each batch of run completions is
   * written). A shared store's completion batch that queues no more deliveries than that sends no `deliveries`
   * notice: the runtime hands them to its own outbox, and the other nodes' claims would come back empty (one route is
   * claimed by one node at a time). Not given (or 0): every batch that queues a delivery tells the others. A store
   * with no notices (SQLite) does not need it.
   */
  outboxSpare?(spare: () => number): void;
  /**
   * Tell the other nodes of live feed events of node `node`: `events` are each one event's JSON, together (with the
   * envelope) under FEED_NOTICE_MAX_BYTES; `watchMs`: see the `feed` notice. Best-effort like every notice. A
   * single-process store does nothing.
   */
  publishFeed(node: string, events: readonly string[], watchMs?: number): Promise<void>;
}
