import type { ClusterNotice, ClusterStore } from './types.js';

/**
 * The cluster seams of a single-process driver (SQLite): heartbeat leases and lockouts in memory (one process holds
 * the store, so memory is cluster-wide), and no notices (the process signals its own runtime directly). The node
 * registry is the driver's own (a table, so `hookgate nodes` can read it from another process).
 */
export class LocalCluster
  implements
    Pick<
      ClusterStore,
      'shared' | 'leaseHeartbeat' | 'releaseHeartbeat' | 'shareLockout' | 'activeLockouts' | 'subscribe' | 'publishFeed'
    >
{
  readonly shared = false;
  private readonly heartbeatLeases = new Map<string, { owner: string; until: number }>();
  /** Bounded by the limiter that feeds it (`hooks.authFailureLimit.maxTrackedClients`); expired ones are dropped on read. */
  private readonly lockouts = new Map<string, number>();

  async leaseHeartbeat(sessionKey: string, owner: string, now: number, leaseMs: number): Promise<boolean> {
    const held = this.heartbeatLeases.get(sessionKey);
    if (held && held.owner !== owner && held.until > now) return false;
    this.heartbeatLeases.set(sessionKey, { owner, until: now + leaseMs });
    return true;
  }

  async releaseHeartbeat(sessionKey: string, owner: string): Promise<void> {
    if (this.heartbeatLeases.get(sessionKey)?.owner === owner) this.heartbeatLeases.delete(sessionKey);
  }

  async shareLockout(bucket: string, until: number): Promise<void> {
    this.lockouts.set(bucket, Math.max(until, this.lockouts.get(bucket) ?? 0));
  }

  async activeLockouts(now: number): Promise<{ bucket: string; until: number }[]> {
    const out: { bucket: string; until: number }[] = [];
    for (const [bucket, until] of this.lockouts) {
      if (until > now) out.push({ bucket, until });
      else this.lockouts.delete(bucket);
    }
    return out;
  }

  subscribe(_listener: (notice: ClusterNotice) => void): () => void {
    return () => {};
  }

  /** One process: its feed is the whole feed already. */
  async publishFeed(_node: string, _events: readonly string[]): Promise<void> {}
}
