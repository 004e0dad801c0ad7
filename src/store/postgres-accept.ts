/**
 * The accept path of the PostgreSQL driver: `GroupCommit` gathers the accepts and received records of one turn of
 * the event loop, and the whole batch goes to the server as ONE statement, `SELECT hookgate_accept($1::jsonb, $2)`
 * (postgres-accept-function.ts), which is one round trip and one transaction (autocommit of a single statement:
 * no BEGIN/COMMIT round trips). Callers are answered only after it returned, i.e. after COMMIT.
 *
 * If the batch fails for a reason other than the connection (one command breaks a constraint), it was rolled back
 * whole; each command is then sent alone, so only the one that fails again fails (as commitIsolated does for SQLite).
 */
import { GroupCommit, type WriteResult } from './group-commit.js';
import { type PgDb, sendIsolated } from './postgres-db.js';
import { eventRow, runRow } from './postgres-rows.js';
import { PG } from './postgres-statements.js';
import { receivedToTuple } from './record-encoding.js';
import type { AcceptCommand, AcceptResult, ReceivedHook } from './types.js';

/** One command of the batch, as hookgate_accept reads it: `k: 'a'` an accept, `k: 'r'` a received record only. */
type AcceptOp = { kind: 'accept'; cmd: AcceptCommand } | { kind: 'received'; rec: ReceivedHook };

function toJson(op: AcceptOp): unknown {
  if (op.kind === 'received') return { k: 'r', rec: receivedToTuple(op.rec) };
  const { cmd } = op;
  const idem = cmd.idempotency;
  return {
    k: 'a',
    // Ids are filled in by the function (event ids depend on coalescing); run ids are known here.
    rec: receivedToTuple({ ...cmd.received, eventIds: [], runIds: cmd.received.runIds }),
    runIds: cmd.runs.map((r) => r.id),
    events: cmd.events.map(eventRow),
    runs: cmd.runs.map(runRow),
    idem: idem
      ? {
          scope: idem.scope,
          keyHash: idem.keyHash,
          fingerprint: idem.fingerprint,
          expiresAt: idem.expiresAt,
          sender: idem.sender,
          maxPerSender: idem.maxPerSender,
        }
      : null,
    spec: cmd.answerSpec,
  };
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
    const { rows } = await this.db.query<{ r: unknown[] }>(PG.accept, [JSON.stringify(ops.map(toJson)), this.channel]);
    return rows[0]!.r;
  }

  private commit(ops: AcceptOp[]): Promise<WriteResult[]> {
    return sendIsolated(ops, (batch) => this.send(batch));
  }
}
