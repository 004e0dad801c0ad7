/**
 * The accept semantics of the SQLite driver, in one place: per command, the idempotency key first (a live key with
 * the same fingerprint is a duplicate answered with the first outcome, another fingerprint a conflict, an expired
 * one is replaced), then each wake coalesced into the session's last pending event or queued, the runs, the key's
 * replay body and the sender cap, and the received record. PostgreSQL does the same in hookgate_accept
 * (postgres-accept-function.ts); the shared contract suite holds both to it (test/store/contract.ts: wake
 * events, idempotency, keys per sender; contract-provenance.ts). Runs inside the writer's transaction, as every
 * write op (sqlite-write-ops.ts).
 */
import type { Row } from './record-encoding.js';
import type { SqliteWriter } from './sqlite-writer.js';
import type { AcceptCommand, AcceptOutcome, AcceptResult, IdempotencyClaim, NewSystemEvent, Replay } from './types.js';

export function accept(w: SqliteWriter, cmd: AcceptCommand): AcceptResult {
  const now = cmd.received.at;
  const idem = cmd.idempotency;
  if (idem) {
    const row = w.stmt.getIdem.get(idem.scope, idem.keyHash) as Row | undefined;
    if (row && (row.expires_at as number) > now) {
      if (row.fingerprint !== idem.fingerprint) {
        w.insertReceived({ ...cmd.received, status: 409, code: 'idempotency_conflict' });
        return { kind: 'conflict' };
      }
      const replay = JSON.parse(row.body as string) as Replay;
      w.insertReceived({
        ...cmd.received,
        status: row.status as number,
        code: 'duplicate',
        eventIds: replay.outcome.events.map((e) => e.eventId),
      });
      return { kind: 'duplicate', replay, status: row.status as number };
    }
    if (row) {
      w.stmt.deleteIdem.run(idem.scope, idem.keyHash);
      w.idemSenders.delete(row.sender as string); // counted again when next needed
    }
  }

  // The lists are made by `append`, not mapped: an optimised `map` makes a holey array, which JSON.stringify (the
  // received_log block, a replay) then serialises element by element on its slow path.
  let events: AcceptOutcome['events'] | undefined;
  let eventIds: string[] | undefined;
  let runIds: string[] | undefined;
  for (const ev of cmd.events) {
    const last = w.lastPendingOf(ev.sessionKey);
    if (coalescesInto(last, ev)) {
      events = append(events, { eventId: last.id, outcome: 'coalesced' });
      eventIds = append(eventIds, last.id);
      continue;
    }
    w.insertEvent(ev);
    events = append(events, { eventId: ev.id, outcome: 'queued' });
    eventIds = append(eventIds, ev.id);
  }
  for (const run of cmd.runs) {
    w.insertRun(run);
    runIds = append(runIds, run.id);
  }
  const outcome: AcceptOutcome = { events: events ?? [] };
  if (idem) {
    const replay: Replay = { spec: cmd.answerSpec, outcome };
    w.stmt.insertIdem.run(
      idem.scope,
      idem.keyHash,
      idem.fingerprint,
      cmd.received.status,
      JSON.stringify(replay),
      now,
      idem.expiresAt,
      idem.sender,
    );
    capSenderKeys(w, idem);
  }
  w.insertReceived(cmd.received, eventIds ?? [], runIds ?? []);
  return { kind: 'accepted', outcome };
}

/**
 * `list` with `x` at its end; a new list of `x` alone when there is none yet. A request brings one wake or one run
 * most of the time, and an empty literal's first push grows it to 17 slots (~150 bytes of garbage per list).
 */
function append<T>(list: T[] | undefined, x: T): T[] {
  if (list === undefined) return [x];
  list.push(x);
  return list;
}

/**
 * Keep at most `maxPerSender` keys of the claim's sender (the one just stored included): the oldest go first. The
 * count is kept in the writer after one COUNT per sender, so a request with a key pays no scan of the sender's keys.
 */
function capSenderKeys(w: SqliteWriter, idem: IdempotencyClaim): void {
  let n = w.idemSenders.get(idem.sender);
  if (n === undefined) {
    n = (w.stmt.countIdemOf.get(idem.sender) as { n: number }).n;
    if (w.idemSenders.size >= 10_000) w.idemSenders.clear(); // bounded; a forgotten sender is counted again
  } else n++;
  if (n > idem.maxPerSender) n -= w.stmt.dropOldestIdemOf.run(idem.sender, n - idem.maxPerSender).changes;
  w.idemSenders.set(idem.sender, n);
}

/** The last pending event of a session, as far as coalescing needs it (text and provenance). */
export interface PendingTail {
  id: string;
  text: string;
  untrusted: boolean;
  source: string | null;
}

/**
 * A wake coalesces into the session's last pending event only when it is the same text with the same provenance: a
 * trusted and an untrusted event never merge (the heartbeat would show one of them wrongly), nor two sources.
 * PostgreSQL applies the same rule in hookgate_accept (postgres-accept-function.ts).
 */
function coalescesInto(last: PendingTail | null, ev: NewSystemEvent): last is PendingTail {
  return (
    last !== null &&
    last.text === ev.text &&
    last.untrusted === (ev.untrusted === true) &&
    last.source === (ev.source ?? null)
  );
}
