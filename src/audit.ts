/**
 * The audit trail (docs/security.md, "The audit trail"): who changed what, as one structured log line with
 * `event: "audit"` (info) and one record in the store (`hookgate audit`, `GET /api/v1/audit`). The one home of the
 * audit kinds and of the recorder; what a config change says is built in audit-diff.ts.
 *
 * Recording never fails the caller: the line is logged at once, the record is queued and appended in batches. While
 * the store refuses, the queue keeps at most `maxQueued` records (the oldest are dropped, counted in a warning) and
 * the append is retried with backoff: a store outage costs bounded memory, never an unbounded queue.
 */
import { type ConfigDiff, diffConfigs, maskSecrets } from './audit-diff.js';
import { backoffMs } from './backoff.js';
import { newId } from './ids.js';
import type { Logger } from './log.js';
import type { AuditEntry, AuditStore } from './store/audit-types.js';
import { errorMessage } from './text-safe.js';

export const AUDIT_KINDS = [
  /** A reload applied a new config: `detail.changes` by key path, secrets masked. */
  'config.reload',
  /** A reload was refused (invalid file, channels that failed to start): the old generation stays. */
  'config.rejected',
  /** A token (a list of tokens: by id) was added, removed or replaced by a reload. */
  'token.rotated',
  /** A repair through the admin API or the CLI: a run or a delivery queued again. */
  'admin.retry',
  /** The auth-failure limiter locked a client's address bucket out. */
  'lockout',
  /** The operator set a session's route (`hookgate sessions route`): `detail.from` → `detail.to`. */
  'session.route',
  /** The operator removed the rows of nodes gone for long (`hookgate nodes prune`): `detail.nodes`, their ids. */
  'nodes.pruned',
] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];

/** Records kept in memory while the store refuses them. */
export const AUDIT_MAX_QUEUED = 1000;
/** Records appended per store call. */
const BATCH = 100;
const RETRY = { baseDelayMs: 500, maxDelayMs: 30_000 };

export interface AuditOptions {
  logger: Logger;
  store: Pick<AuditStore, 'appendAudit'>;
  /** The process writing (the node id); null from the CLI. */
  node: string | null;
  maxQueued?: number;
  now?: () => number;
}

/** One record, `detail` masked (a second net: callers pass no secrets). The CLI appends these directly (actor "cli"). */
export function auditEntry(
  kind: AuditKind,
  actor: string,
  detail: Record<string, unknown>,
  node: string | null = null,
  at = Date.now(),
): AuditEntry {
  return { id: newId(), at, kind, actor, node, detail: maskSecrets(detail) as Record<string, unknown> };
}

export class Audit {
  private readonly queue: AuditEntry[] = [];
  private inFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private dropped = 0;
  private readonly maxQueued: number;
  private readonly now: () => number;

  constructor(private readonly opts: AuditOptions) {
    this.maxQueued = opts.maxQueued ?? AUDIT_MAX_QUEUED;
    this.now = opts.now ?? Date.now;
  }

  /** Log and queue one record (masked by `auditEntry`). Never throws. */
  record(kind: AuditKind, actor: string, detail: Record<string, unknown>): AuditEntry {
    const entry = auditEntry(kind, actor, detail, this.opts.node, this.now());
    try {
      this.opts.logger.info({ event: 'audit', auditId: entry.id, kind, actor, detail: entry.detail }, `audit: ${kind}`);
    } catch {
      // A logger that throws must not fail a reload or a retry.
    }
    this.queue.push(entry);
    if (this.queue.length > this.maxQueued) {
      this.queue.shift();
      if (this.dropped++ === 0)
        this.opts.logger.warn(
          { maxQueued: this.maxQueued },
          'audit records dropped: the store refuses them and the queue is full (oldest dropped first)',
        );
    }
    if (!this.timer) this.pump();
    return entry;
  }

  /** A reload's records: `config.reload` with the changes, and `token.rotated` per token (list) that changed. */
  configReloaded(before: unknown, after: unknown, generation: number): ConfigDiff | undefined {
    let diff: ConfigDiff;
    try {
      diff = diffConfigs(before, after);
    } catch (err) {
      // Never in the way of the reload itself: the record says it happened, without the changes.
      this.record('config.reload', 'config', {
        generation,
        changes: [],
        error: `the changes could not be listed: ${errorMessage(err)}`,
      });
      return undefined;
    }
    this.record('config.reload', 'config', {
      generation,
      changes: diff.changes,
      ...(diff.more ? { moreChanges: diff.more } : {}),
    });
    for (const t of diff.tokens) this.record('token.rotated', 'config', { ...t });
    return diff;
  }

  /** Everything queued written (or given up on: a store still refusing at stop loses what it refused). */
  async flush(): Promise<void> {
    await this.inFlight;
    clearTimeout(this.timer);
    this.timer = undefined;
    // One try per batch, no waiting: a stop is not held up by a store that refuses.
    while (this.queue.length && (await this.appendBatch()));
  }

  private pump(): void {
    if (this.inFlight || !this.queue.length) return;
    this.inFlight = this.appendBatch().then(() => {
      this.inFlight = undefined;
      if (!this.queue.length || this.timer) return;
      if (this.failures === 0) return this.pump();
      this.timer = setTimeout(() => ((this.timer = undefined), this.pump()), backoffMs(this.failures, RETRY));
      this.timer.unref();
    });
  }

  /** Whether the batch was stored. */
  private async appendBatch(): Promise<boolean> {
    const batch = this.queue.slice(0, BATCH);
    try {
      await this.opts.store.appendAudit(batch);
    } catch (err) {
      if (this.failures++ === 0)
        this.opts.logger.warn(
          { err: errorMessage(err), queued: this.queue.length },
          'audit records not stored yet: retrying',
        );
      return false;
    }
    // Ids are unique: a batch appended again after an unclear failure is not stored twice.
    this.queue.splice(0, this.queue.indexOf(batch[batch.length - 1]!) + 1);
    if (this.failures || this.dropped) {
      this.opts.logger.info({ dropped: this.dropped }, 'audit records are stored again');
    }
    this.failures = 0;
    this.dropped = 0;
    return true;
  }
}
