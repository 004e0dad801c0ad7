/**
 * Group commit for the runtime's writes on PostgreSQL, as the accept path has it (postgres-accept.ts): the run
 * completions of one turn of the event loop (and those that arrive while a batch commits) go to the server as ONE
 * statement, one transaction, one commit (one WAL flush) for the batch; so do the delivery outcomes. A completion is
 * answered only after its batch committed. Each completion is still all or nothing: its run's end, summary event,
 * deliveries and transcript are in the same statement, fenced by its lease (postgres-statements.ts, COMPLETE_RUNS).
 */
import { GroupCommit } from './group-commit.js';
import { type PgDb, sendIsolated } from './postgres-db.js';
import { deliveryRow, eventRow, messageRow } from './postgres-rows.js';
import { PG } from './postgres-statements.js';
import type { DeliveryOutcome, RunOutcome } from './types.js';

interface Finish {
  id: string;
  owner: string;
  outcome: DeliveryOutcome;
  now: number;
}

export class PgCompletions {
  private readonly runs: GroupCommit<RunOutcome>;
  private readonly deliveries: GroupCommit<Finish>;
  /** How many more deliveries this node's outbox would claim now (ClusterStore.outboxSpare); 0: tell the others. */
  outboxSpare: () => number = () => 0;

  constructor(
    private readonly db: PgDb,
    private readonly channel: string,
  ) {
    this.runs = new GroupCommit((ops) => sendIsolated(ops, (batch) => this.completeRuns(batch)));
    this.deliveries = new GroupCommit((ops) => sendIsolated(ops, (batch) => this.finishDeliveries(batch)));
  }

  /** True when written; false when the run's lease was lost (another worker's result counts). */
  completeRun(c: RunOutcome): Promise<boolean> {
    return this.runs.write(c) as Promise<boolean>;
  }

  finishDelivery(id: string, owner: string, outcome: DeliveryOutcome, now: number): Promise<void> {
    return this.deliveries.write({ id, owner, outcome, now }).then(() => undefined);
  }

  /** Wait for the batches in flight, then refuse new writes. */
  async close(): Promise<void> {
    await Promise.all([this.runs.idle(), this.deliveries.idle()]);
    this.runs.close();
    this.deliveries.close();
  }

  private async completeRuns(batch: RunOutcome[]): Promise<boolean[]> {
    const rows = batch.map((c, i) => ({
      i,
      run_id: c.runId,
      owner: c.owner,
      state: c.state,
      finished_at: c.finishedAt,
      error: c.error,
      reply: c.reply,
      delivery_status: c.deliveryStatus,
      events: c.events.map(eventRow),
      deliveries: c.deliveries.map(deliveryRow),
      messages: c.messages.map(messageRow),
    }));
    let spare = 0;
    try {
      spare = Math.max(0, Math.floor(this.outboxSpare()));
    } catch {
      // the hint is only a hint: tell the others
    }
    const { rows: out } = await this.db.query<{ done: number[] }>(PG.completeRuns, [
      JSON.stringify(rows),
      this.channel,
      spare,
    ]);
    const done = new Set(out[0]?.done ?? []);
    return batch.map((_, i) => done.has(i));
  }

  private async finishDeliveries(batch: Finish[]): Promise<undefined[]> {
    const rows = batch.map(({ id, owner, outcome: o, now }) => ({
      id,
      owner,
      kind: o.kind,
      at: o.kind === 'retry' ? null : o.at,
      next_attempt_at: o.kind === 'retry' ? o.nextAttemptAt : null,
      error: o.kind === 'delivered' ? null : o.error,
      now,
    }));
    await this.db.query(PG.finishDeliveries, [JSON.stringify(rows)]);
    return batch.map(() => undefined);
  }
}
