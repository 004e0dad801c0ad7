/**
 * Every write of the SQLite store, one handler each, named after the `Store` method it serves, taking that method's
 * arguments and giving its value (checked below): the handler's signature defines the op (`WriteOp`) that the
 * store's method of the same name sends (sqlite.ts). Handlers run synchronously inside the writer's transaction (see
 * SqliteWriter). Adding a write: docs/architecture.md, "The store's roles".
 */
import { AUDIT_WRITE_OPS } from './sqlite-audit.js';
import { RETENTION_WRITE_OPS } from './sqlite-retention.js';
import { GMAIL_WRITE_OPS } from './sqlite-gmail.js';
import { refusalsToJson, type Row, rowToDelivery, rowToRun } from './record-encoding.js';
import { accept } from './sqlite-accept.js';
import type { SqliteWriter } from './sqlite-writer.js';
import type {
  Delivery,
  DeliveryOutcome,
  HeartbeatCompletion,
  NewSystemEvent,
  NodeInfo,
  ReceivedHook,
  RefusalWindow,
  Run,
  RunOutcome,
  Store,
} from './types.js';

/**
 * Fresh runs one claim reaches at most. A fresh run that has to wait (an older run of its session is open) is one
 * write to take into the index; a burst of a thousand runs in one session is taken in over several claims rather than
 * in one transaction that holds up the accepts.
 */
const FRESH_WALK = 256;
/** Fresh runs read at a time once the first read found a run that waits. */
const FRESH_STEP = 32;

/** The id of the row `probeWrite` writes and removes (never seen: it is gone by the commit). */
const PROBE_NODE_ID = 'hookgate:probe';

/** A handler for a `Store` method: the writer, then the method's arguments; it returns what the method resolves to. */
type Handlers = {
  [K in keyof Store]?: Store[K] extends (...args: infer A) => Promise<infer R>
    ? (w: SqliteWriter, ...args: A) => R
    : never;
};

export const WRITE_OPS = {
  ...GMAIL_WRITE_OPS,
  ...AUDIT_WRITE_OPS,
  ...RETENTION_WRITE_OPS,
  accept, // sqlite-accept.ts

  recordReceived(w: SqliteWriter, rec: ReceivedHook): void {
    w.insertReceived(rec);
  },

  recordRefusals(w: SqliteWriter, window: RefusalWindow, keepWindows: number): void {
    const { seq } = w.stmt.insertRefusals.get(window.at, window.windowMs, refusalsToJson(window)) as { seq: number };
    if (seq > keepWindows) w.stmt.capRefusals.run(seq - keepWindows);
  },

  requeueFailedRuns(w: SqliteWriter, since: number, now: number): string[] {
    return (w.stmt.requeueFailed.all({ since, now }) as Array<{ id: string }>).map((r) => r.id);
  },

  requeueRun(w: SqliteWriter, id: string, now: number): Run | undefined {
    const row = w.stmt.requeue.get(now, id) as Row | undefined;
    return row && rowToRun(row);
  },

  claimRuns(w: SqliteWriter, owner: string, now: number, leaseMs: number, limit: number): Run[] {
    const lease = (seq: number): Run => {
      w.stmt.leaseRun.run({ seq, owner, until: now + leaseMs, now });
      return rowToRun(w.stmt.runBySeq(seq)!);
    };
    const expired = w.stmt.claimableExpired.all({ now, limit }) as Array<{ seq: number }>;
    const queued =
      expired.length < limit
        ? (w.stmt.claimableQueued.all({ now, limit: limit - expired.length }) as Array<{ seq: number }>)
        : [];
    const claimed = [...expired, ...queued].map(({ seq }) => lease(seq));
    // Then the fresh runs, oldest first (fresh-runs.ts): each leased, or taken into the index when it has to wait.
    // As many as are wanted, as a claim usually finds them all runnable; past a run that waits, more at a time.
    for (let walked = 0; claimed.length < limit && walked < FRESH_WALK; ) {
      const want = walked === 0 ? limit - claimed.length : Math.min(FRESH_WALK - walked, FRESH_STEP);
      const fresh = w.stmt.freshRuns.all({ limit: want }) as Array<{ seq: number; claimable: number }>;
      for (const { seq, claimable } of fresh) {
        if (claimed.length === limit) break; // the rest stay fresh: the claims take them in seq order
        if (claimable) claimed.push(lease(seq));
        else w.stmt.takeInRun.run(seq);
      }
      walked += want;
      if (fresh.length < want) break;
    }
    return claimed;
  },

  renewRunLeases(w: SqliteWriter, owner: string, ids: string[], until: number): void {
    for (const id of ids) w.stmt.renewRun.run(until, id, owner);
  },

  completeRun(w: SqliteWriter, c: RunOutcome): boolean {
    const changed = w.stmt.finishRun.run({
      state: c.state,
      finishedAt: c.finishedAt,
      error: c.error,
      reply: c.reply,
      deliveryStatus: c.deliveryStatus,
      runId: c.runId,
      owner: c.owner,
    }).changes;
    if (!changed) return false; // the lease was lost (expired and taken over): the other worker's result counts
    for (const ev of c.events) w.insertEvent(ev);
    for (const d of c.deliveries) w.insertDelivery(d);
    for (const m of c.messages) w.insertMessage(m);
    return true;
  },

  deferRun(w: SqliteWriter, d: { runId: string; owner: string; until: number; error: string; now: number }): boolean {
    return w.stmt.deferRun.run(d).changes > 0;
  },

  releaseRuns(w: SqliteWriter, owner: string, ids: string[], now: number, note: string): void {
    for (const id of ids) w.stmt.releaseRun.run(now, note, id, owner);
  },

  registerNode(w: SqliteWriter, node: NodeInfo): void {
    w.stmt.upsertNode.run(node);
  },
  removeNode(w: SqliteWriter, id: string): void {
    w.stmt.deleteNode.run(id);
  },
  /** `/readyz`: a row written and removed in one transaction, so pages reach the WAL and nothing is left. */
  probeWrite(w: SqliteWriter, now: number): void {
    w.stmt.upsertNode.run({
      id: PROBE_NODE_ID,
      host: '',
      pid: 0,
      version: '',
      url: '',
      startedAt: now,
      lastSeenAt: now,
    });
    w.stmt.deleteNode.run(PROBE_NODE_ID);
  },
  recoverLeases(w: SqliteWriter, now: number): number {
    w.stmt.recoverDeliveries.run();
    return w.stmt.recoverLeases.run(now).changes;
  },

  failRun(w: SqliteWriter, id: string, error: string, now: number): void {
    w.stmt.failRun.run(error, now, now, id);
  },

  addEvents(w: SqliteWriter, events: NewSystemEvent[]): void {
    for (const ev of events) w.insertEvent(ev);
  },

  completeHeartbeat(w: SqliteWriter, c: HeartbeatCompletion): void {
    if (c.eventIds.length) {
      w.stmt.consumeEvents.run({
        consumedAt: c.consumedAt,
        heartbeatId: c.heartbeatId,
        sessionKey: c.sessionKey,
        n: c.eventIds.length,
        ids: JSON.stringify(c.eventIds),
      });
    }
    w.forgetPending(c.sessionKey);
    for (const d of c.deliveries) w.insertDelivery(d);
    for (const m of c.messages) w.insertMessage(m);
  },

  setRoute(
    w: SqliteWriter,
    sessionKey: string,
    agentId: string,
    channel: string,
    to: string,
    now: number,
    accountId: string | null = null,
  ): void {
    w.stmt.upsertRoute.run({ key: sessionKey, agentId, channel, to, accountId, now });
  },

  claimDeliveries(
    w: SqliteWriter,
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    followers = 0,
  ): Delivery[] {
    type Head = {
      id: string;
      channel: string;
      recipient: string;
      seq: number;
      next_attempt_at: number;
      lease_until: number | null;
    };
    const due: Head[] = [];
    const nextHead = (h: Head) =>
      (w.stmt.nextRouteHeadSameChannel.get({ channel: h.channel, recipient: h.recipient }) ??
        w.stmt.nextRouteHeadLaterChannel.get({ channel: h.channel })) as Head | undefined;
    for (let h = w.stmt.firstRouteHead.get() as Head | undefined; h; h = nextHead(h)) {
      if (h.next_attempt_at <= now && (h.lease_until === null || h.lease_until < now)) due.push(h);
    }
    const heads = due
      .sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.seq - b.seq)
      .slice(0, Math.max(0, limit));
    const lease = (seq: number) => {
      w.stmt.leaseDelivery.run({ seq, owner, until: now + leaseMs, now });
      return rowToDelivery(w.stmt.deliveryBySeq(seq)!);
    };
    const out: Delivery[] = [];
    for (const head of heads) {
      out.push(lease(head.seq));
      if (followers <= 0) continue;
      // The head's route, in order, as long as each next one is due and free (see Store.claimDeliveries).
      const next = w.stmt.routeFollowers.all({
        channel: head.channel,
        recipient: head.recipient,
        seq: head.seq,
        limit: followers,
      }) as Row[];
      for (const f of next) {
        if ((f.next_attempt_at as number) > now || (f.lease_until !== null && (f.lease_until as number) >= now)) break;
        out.push(lease(f.seq as number));
      }
    }
    return out;
  },

  releaseDeliveries(w: SqliteWriter, owner: string, ids: string[], now: number): void {
    for (const id of ids) w.stmt.releaseDelivery.run(now, id, owner);
  },

  deliveryProgress(w: SqliteWriter, id: string, owner: string, chunksSent: number, now: number): void {
    w.stmt.progress.run(chunksSent, now, id, owner);
  },

  finishDelivery(w: SqliteWriter, id: string, owner: string, o: DeliveryOutcome, now: number): void {
    if (o.kind === 'delivered') w.stmt.delivered.run(o.at, now, id, owner);
    else if (o.kind === 'retry') w.stmt.retryLater.run(o.nextAttemptAt, o.error, now, id, owner);
    else w.stmt.dead.run(o.error, now, id, owner);
  },

  retryDelivery(w: SqliteWriter, id: string, now: number): Delivery | undefined {
    const row = w.stmt.retryDelivery.get(now, now, id) as Row | undefined;
    return row ? rowToDelivery(row) : undefined;
  },
} satisfies Handlers;

type WriteOps = typeof WRITE_OPS;
export type WriteKind = keyof WriteOps;
/** The arguments of a write: those of its `Store` method. */
export type WriteArgs<K extends WriteKind> = WriteOps[K] extends (w: SqliteWriter, ...args: infer A) => unknown
  ? A
  : never;
export type WriteValue<K extends WriteKind> = ReturnType<WriteOps[K]>;
/** A write the SQLite writer performs. Plain data: it crosses to the writer thread by structured clone. */
export type WriteOp<K extends WriteKind = WriteKind> = { [P in K]: { op: P; args: WriteArgs<P> } }[K];

/** Run one op on the writer's connection (inside its transaction). A table lookup, not a switch: same cost. */
export function executeWrite(w: SqliteWriter, op: WriteOp): unknown {
  return (WRITE_OPS[op.op] as (w: SqliteWriter, ...args: unknown[]) => unknown)(w, ...op.args);
}
