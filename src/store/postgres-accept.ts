/**
 * The accept path of the PostgreSQL driver: `GroupCommit` gathers the accepts and received records of one turn of
 * the event loop, and the whole batch goes to the server as ONE statement, `SELECT hookgate_accept_batch(…)`
 * (postgres-accept-function.ts), which is one round trip and one transaction (autocommit of a single statement:
 * no BEGIN/COMMIT round trips). Callers are answered only after it returned, i.e. after COMMIT.
 *
 * The batch is sent as the rows to insert and the received_log block as it will be stored, rendered here as if every
 * command were accepted as sent; the server answers NULL when it was (nothing coalesced, no key used before), and
 * each command's outcome is then built here. Otherwise it names what went differently.
 *
 * If the batch fails for a reason other than the connection (one command breaks a constraint), it was rolled back
 * whole; each command is then sent alone, so only the one that fails again fails (as commitIsolated does for SQLite).
 */
import { GroupCommit, type WriteResult } from './group-commit.js';
import { type PgDb, sendIsolated } from './postgres-db.js';
import { runRow } from './postgres-rows.js';
import { PG } from './postgres-statements.js';
import { type ReceivedTuple, receivedToTuple } from './record-encoding.js';
import type { AcceptCommand, AcceptOutcome, AcceptResult, NewSystemEvent, ReceivedHook } from './types.js';

/** One command of the batch: an accept, or a received record only (a request answered without one). */
type AcceptOp = { kind: 'accept'; cmd: AcceptCommand } | { kind: 'received'; rec: ReceivedHook };

/** What hookgate_accept_batch answers when a command went otherwise than sent; NULL when none did. */
interface BatchAnswer {
  /** [command index, index of the event in the command, id of the event it coalesced into] */
  merged: [number, number, string][] | null;
  /** By command index: answered from its idempotency key. */
  answers: Record<string, AcceptResult>;
}

/**
 * A new event as hookgate_accept_batch reads it: its columns under the short keys of the function's column list
 * (the batch's largest part, serialised here and parsed there), `c` the index of its command.
 */
function eventJson(c: number, ev: NewSystemEvent) {
  return {
    c,
    i: ev.id,
    s: ev.sessionKey,
    a: ev.agentId,
    t: ev.text,
    o: ev.origin,
    r: ev.runId ?? null,
    at: ev.createdAt,
    u: ev.untrusted === true ? 1 : 0,
    src: ev.source ?? null,
  };
}

/** The statement's parameters for `ops`: the rows to insert, the claims, the received_log block and its time. */
function toParams(ops: AcceptOp[], channel: string): unknown[] {
  const events: unknown[] = [];
  const runs: unknown[] = [];
  const records: ReceivedTuple[] = [];
  let claims: unknown[] | null = null;
  let at = 0;
  for (let c = 0; c < ops.length; c++) {
    const op = ops[c]!;
    if (op.kind === 'received') {
      records.push(receivedToTuple(op.rec));
      if (op.rec.at > at) at = op.rec.at;
      continue;
    }
    const { cmd } = op;
    // Pushed, not mapped: see sqlite-accept.ts (a holey array is serialised on JSON.stringify's slow path).
    const eventIds: string[] = [];
    const runIds: string[] = [];
    for (const ev of cmd.events) {
      events.push(eventJson(c, ev));
      eventIds.push(ev.id);
    }
    for (const run of cmd.runs) {
      runs.push([c, runRow(run)]);
      runIds.push(run.id);
    }
    const idem = cmd.idempotency;
    if (idem) {
      claims ??= [];
      claims.push({
        c,
        scope: idem.scope,
        keyHash: idem.keyHash,
        fingerprint: idem.fingerprint,
        expiresAt: idem.expiresAt,
        sender: idem.sender,
        maxPerSender: idem.maxPerSender,
        status: cmd.received.status,
        at: cmd.received.at,
        spec: cmd.answerSpec,
      });
    }
    const rec = receivedToTuple(cmd.received);
    rec[6] = eventIds;
    rec[7] = runIds;
    records.push(rec);
    if (cmd.received.at > at) at = cmd.received.at;
  }
  return [
    JSON.stringify(events),
    JSON.stringify(runs),
    claims && JSON.stringify(claims),
    JSON.stringify(records),
    at,
    channel,
  ];
}

/** Command `c`'s outcome: its events queued under their own ids, except those the answer says coalesced. */
function outcomeOf(cmd: AcceptCommand, c: number, merged: BatchAnswer['merged']): AcceptOutcome {
  const events: AcceptOutcome['events'] = [];
  for (const ev of cmd.events) events.push({ eventId: ev.id, outcome: 'queued' });
  if (merged) for (const [mc, k, into] of merged) if (mc === c) events[k] = { eventId: into, outcome: 'coalesced' };
  return { events };
}

export class PgAcceptPath {
  private readonly writes: GroupCommit<AcceptOp>;

  constructor(
    private readonly db: PgDb,
    private readonly channel: string,
    onCommit?: (ms: number, ops: number) => void,
  ) {
    this.writes = new GroupCommit((ops) => this.commit(ops), onCommit);
  }

  accept(cmd: AcceptCommand): Promise<AcceptResult> {
    return this.writes.write({ kind: 'accept', cmd }) as Promise<AcceptResult>;
  }

  recordReceived(rec: ReceivedHook): Promise<void> {
    return this.writes.write({ kind: 'received', rec }).then(() => undefined);
  }

  /** Wait for the batch in flight, then refuse new writes. */
  async close(): Promise<void> {
    await this.writes.idle();
    this.writes.close();
  }

  private async send(ops: AcceptOp[]): Promise<unknown[]> {
    const { rows } = await this.db.query<{ r: BatchAnswer | null }>(PG.accept, toParams(ops, this.channel));
    const answer = rows[0]!.r;
    const results: unknown[] = [];
    for (let c = 0; c < ops.length; c++) {
      const op = ops[c]!;
      if (op.kind === 'received') results.push(undefined);
      else
        results.push(
          answer?.answers[c] ?? { kind: 'accepted', outcome: outcomeOf(op.cmd, c, answer ? answer.merged : null) },
        );
    }
    return results;
  }

  private commit(ops: AcceptOp[]): Promise<WriteResult[]> {
    return sendIsolated(ops, (batch) => this.send(batch));
  }
}
