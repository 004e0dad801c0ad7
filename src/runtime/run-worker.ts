import type { Logger } from '../log.js';
import { backoffMs } from '../backoff.js';
import { type Abort, deadline } from '../deadline.js';
import { newId } from '../ids.js';
import type { FinishedRunState } from '../enums.js';
import { type ChatMessage, ProviderError } from '../providers/types.js';
import type { NewDelivery, NewSystemEvent, Run, RunOutcome } from '../store/types.js';
import { ownSessionKey } from '../store/own-session.js';
import { errorMessage, logSafe } from '../text-safe.js';
import { RuntimeAnnouncer } from './announce.js';
import { ClaimLoop, drainWithin } from './claim-loop.js';
import { LeaseKeeper, leaseLost, writeWhileLeased } from './lease-keeper.js';
import { OUTAGE_BACKOFF } from './outage.js';
import { planDelivery } from './delivery-plan.js';
import { readsLastRoute } from './routing.js';
import { detectSuspiciousPatterns } from './suspicious-patterns.js';
import { MAIN_SESSION_KEY, type RuntimeDeps, type RuntimeEnv } from './env.js';
import { runPrompt } from './prompt.js';
import { hookSummary, summaryEvent } from './summary.js';
import { runTurn } from './turn.js';

export const RUN_LEASE_MS = 30_000;
/** A run whose worker died this many times is failed instead of started again (it may be what kills the process). */
export const MAX_RUN_STARTS = 5;
const POLL_MS = 1000;
/** Transcript turns a persistent session's run reads back: retention keeps at least these per session (pruner.ts). */
export const HISTORY_TURNS = 40;
/** Kept on a run given back by a stop (shown by `runs show`); a finished run replaces it with its own error or none. */
export const INTERRUPTED_NOTE =
  'interrupted: hookgate stopped while this run was working; it was given back to the queue and runs again (same id)';
/** Kept on a run claimed ahead and given back unstarted by a stop. */
export const UNSTARTED_NOTE = 'given back unstarted: hookgate stopped before this run started; it runs again (same id)';

/** Timings; the defaults are production's (tests shorten them). */
export interface RunWorkerOptions {
  /**
   * How long a claimed run is leased; renewed every third of it while the run works. A run whose lease cannot be
   * renewed (the store unreachable for about two thirds of it) is aborted and not completed (lease-keeper.ts).
   */
  leaseMs?: number;
  /** Also look for runnable runs this often (expired leases of a dead process). */
  pollMs?: number;
}

export interface RunWorkerCallbacks {
  /**
   * A run's completion, with these outbox rows, was just queued to the store, not committed yet. True when the
   * outbox was told here, on a store whose writes commit in the order they are queued (SQLite): its claim, queued
   * behind the completion, finds the rows, and shares the completion's commit when it is queued in the same turn.
   */
  onFinishing?(deliveries: readonly NewDelivery[]): boolean;
  /**
   * A run finished: its summary is committed; `wakeMode: now` asks for a heartbeat. `deliveries`: the outbox rows
   * its completion queued (none when it was not committed, or its reply goes nowhere). `told`: `onFinishing` told
   * the outbox of them already, for the write that committed.
   */
  onFinished(run: Run, committed: boolean, deliveries: readonly NewDelivery[], told: boolean): void;
}

export type RetryDecision = { kind: 'defer'; until: number } | { kind: 'fail'; gaveUp?: string };

/**
 * After a transient model failure (unreachable, reset, request timed out, 429, 5xx): queue the run again after a
 * backoff (5 s doubling to 5 min by default, jittered; at least the server's Retry-After), for at most
 * `retry.maxSeconds` from its first such failure — the last try lands at the window's end. Pure.
 */
export function retryDecision(
  run: Pick<Run, 'retries' | 'retryingSince'>,
  err: { retryAfterMs?: number | undefined },
  retry: { maxSeconds: number; initialBackoffMs: number; maxBackoffMs: number },
  now: number,
  random: () => number = Math.random,
): RetryDecision {
  if (retry.maxSeconds <= 0) return { kind: 'fail' };
  const since = run.retryingSince ?? now;
  const end = since + retry.maxSeconds * 1000;
  if (now >= end) return { kind: 'fail', gaveUp: formatSpan(now - since) };
  const wait = Math.max(
    err.retryAfterMs ?? 0,
    backoffMs(run.retries + 1, { baseDelayMs: retry.initialBackoffMs, maxDelayMs: retry.maxBackoffMs }, random),
  );
  return { kind: 'defer', until: Math.min(now + wait, end) };
}

function formatSpan(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : `${Math.round(s / 60)} min`;
}

/** How the model's turn ended, as the run records it. */
interface TurnResult {
  state: FinishedRunState;
  /** The model's text; null when the turn failed. */
  reply: string | null;
  error: string | null;
  /** When the model was called: the prompt's time in the transcript. */
  started: number;
}

/** The write that ends a run: its state, summary event, deliveries and transcript (the prompt, and the reply if any). Pure. */
function runOutcome(
  run: Run,
  owner: string,
  prompt: string,
  turn: TurnResult,
  end: { finishedAt: number; deliveryStatus: string; deliveries: NewDelivery[]; event: NewSystemEvent },
): RunOutcome {
  const { state, reply, error, started } = turn;
  const { finishedAt } = end;
  return {
    runId: run.id,
    owner,
    state,
    finishedAt,
    error,
    reply,
    deliveryStatus: end.deliveryStatus,
    events: [end.event],
    deliveries: end.deliveries,
    messages: [
      {
        sessionKey: run.sessionKey,
        agentId: run.agentId,
        role: 'user',
        content: prompt,
        runId: run.id,
        createdAt: started,
      },
      ...(reply !== null
        ? [
            {
              sessionKey: run.sessionKey,
              agentId: run.agentId,
              role: 'assistant' as const,
              content: reply,
              runId: run.id,
              createdAt: finishedAt,
            },
          ]
        : []),
    ],
  };
}

/**
 * Executes queued agent runs: at most `agents.defaults.maxConcurrent` at once, one session key's runs in order
 * (the store only hands out the oldest unfinished run of a key), each bounded by its timeoutSeconds. Runs are
 * leased; the lease is renewed while the run works, so a crashed process's runs are picked up again (same id).
 * Finishing writes the run's state, its summary event, its outbox row and its transcript in one transaction.
 */
export class RunWorker {
  private readonly loop: ClaimLoop<Run>;
  private readonly leases: LeaseKeeper;
  private readonly announce: RuntimeAnnouncer;

  constructor(
    private readonly deps: RuntimeDeps,
    private readonly callbacks: RunWorkerCallbacks,
    options: RunWorkerOptions = {},
  ) {
    const leaseMs = options.leaseMs ?? RUN_LEASE_MS;
    this.announce = new RuntimeAnnouncer(deps.feed);
    this.leases = new LeaseKeeper({
      label: 'run lease',
      logger: deps.logger,
      leaseMs,
      renew: (ids, until) => deps.store.renewRunLeases(deps.owner, ids, until),
    });
    this.loop = new ClaimLoop<Run>({
      label: 'runs',
      logger: deps.logger,
      idField: 'runId',
      limit: () => deps.env().config.agents.defaults.maxConcurrent,
      claim: async (n) => {
        const now = Date.now();
        const runs = await deps.store.claimRuns(deps.owner, now, leaseMs, n);
        for (const run of runs) this.leases.hold(run.id, now + leaseMs, (err) => this.loop.abort(run.id, err));
        return runs;
      },
      work: (run, abort) => {
        this.announce.run(run, 'running');
        return this.execute(run, abort).finally(() => this.leases.release(run.id));
      },
      // Where a claim is a round trip: as many runs again are held claimed ahead, so a run that ends makes room for
      // the next at once and a backlog is claimed in batches (docs/scale-out.md, "Run throughput").
      ahead: () => (deps.store.claimRoundTrip ? deps.env().config.agents.defaults.maxConcurrent : 0),
      giveBack: async (runs) => {
        // Never announced as running (that is when one starts): nothing to tell the feed.
        try {
          await deps.store.releaseRuns(
            deps.owner,
            runs.map((r) => r.id),
            Date.now(),
            UNSTARTED_NOTE,
          );
        } finally {
          for (const run of runs) this.leases.release(run.id);
        }
      },
      dropped: (run) => this.leases.release(run.id),
      // A run's end makes its session's next run claimable; one in its own session has none, so it claims only when
      // more work is expected (a full claim, a notify with every slot busy): a claim is a commit, and found nothing.
      claimAfterWork: (run) => run.sessionKey !== ownSessionKey(run.id),
      pollMs: options.pollMs ?? POLL_MS,
      ...(deps.ingressBusy ? { ingressBusy: deps.ingressBusy } : {}),
    });
  }

  get running(): number {
    return this.loop.size;
  }

  /** New runs were queued: claim what fits. */
  notify(): void {
    this.loop.notify();
  }

  /** One claimed run: give up on it, or build its turn, call the model and record the result (or defer it). */
  private async execute(run: Run, shutdown: Abort): Promise<void> {
    if (run.attempts > MAX_RUN_STARTS) return this.giveUp(run);
    const env = this.deps.env();
    const { prompt, messages } = await this.buildTurn(run);
    const turn = await this.callModel(run, env, messages, shutdown);
    if (!turn) return;
    if (leaseLost(shutdown)) return this.dropLost(run, shutdown);
    await this.recordResult(run, env, prompt, turn, shutdown);
  }

  /** A run whose worker died too often: failed, not started again (it may be what kills the process). */
  private async giveUp(run: Run): Promise<void> {
    const error = `gave up after ${run.attempts - 1} interrupted attempts`;
    await this.deps.store.failRun(run.id, error, Date.now());
    this.announce.run(run, 'failed', error);
    this.log(run).error({ attempts: run.attempts }, 'run failed: interrupted too often');
  }

  /** The prompt (the safety-wrapped hook content) after the session's history, when the session is persistent. */
  private async buildTurn(run: Run): Promise<{ prompt: string; messages: ChatMessage[] }> {
    const prompt = runPrompt(run, new Date());
    const suspicious = detectSuspiciousPatterns(run.message);
    if (suspicious.length)
      this.log(run).warn(
        { sessionKey: run.sessionKey, patterns: suspicious },
        'suspicious patterns in external hook content',
      );
    const history =
      run.sessionMode === 'persistent'
        ? (await this.deps.store.sessionMessages(run.agentId, run.sessionKey, HISTORY_TURNS)).map((m) => ({
            role: m.role,
            content: m.content,
          }))
        : [];
    return { prompt, messages: [...history, { role: 'user', content: prompt }] };
  }

  /**
   * The model's turn, bounded by the run's timeout: its reply, or how it failed. Undefined when the run is not to be
   * finished here: its lease was lost, the stop gave it back, or it was deferred for a retry.
   */
  private async callModel(
    run: Run,
    env: RuntimeEnv,
    messages: ChatMessage[],
    shutdown: Abort,
  ): Promise<TurnResult | undefined> {
    // Aborted by the stop (or a lost lease), or when the run's timeout passes.
    const turn = deadline(
      shutdown,
      run.timeoutSeconds * 1000,
      () => new DOMException(`the run's timeout of ${run.timeoutSeconds} s passed`, 'TimeoutError'),
      { unref: true },
    );
    const started = Date.now();
    try {
      const r = await runTurn(env, {
        agentId: run.agentId,
        model: run.model,
        thinking: run.thinking,
        messages,
        signal: turn,
      });
      return { state: 'succeeded', reply: r.text, error: null, started };
    } catch (err) {
      if (leaseLost(shutdown)) return this.dropLost(run, shutdown);
      if (shutdown.aborted) return await this.giveBackStopped(run);
      if (turn.timedOut)
        return { state: 'timed_out', reply: null, error: `timed out after ${run.timeoutSeconds} s`, started };
      const error = err instanceof ProviderError ? `${err.code}: ${err.message}` : errorMessage(err);
      if (!(err instanceof ProviderError && err.retryable)) return { state: 'failed', reply: null, error, started };
      const retry = retryDecision(run, err, env.config.agents.defaults.retry, Date.now());
      if (retry.kind === 'defer') return await this.defer(run, retry.until, error);
      return {
        state: 'failed',
        reply: null,
        error: retry.gaveUp ? `${error} (gave up after ${run.retries} retries over ${retry.gaveUp})` : error,
        started,
      };
    } finally {
      turn.dispose();
    }
  }

  /** Stopping: give the run back; it starts again (same id) on the next start, this attempt not counted. */
  private async giveBackStopped(run: Run): Promise<undefined> {
    await this.deps.store.releaseRuns(this.deps.owner, [run.id], Date.now(), INTERRUPTED_NOTE);
    this.announce.run(run, 'queued', INTERRUPTED_NOTE);
    this.log(run).warn({ attempt: run.attempts }, 'hook agent run interrupted by the stop: given back to the queue');
    return undefined;
  }

  /** A transient model failure within the retry window: the run is queued again, due at `until`. */
  private async defer(run: Run, until: number, error: string): Promise<undefined> {
    if (await this.deps.store.deferRun({ runId: run.id, owner: this.deps.owner, until, error, now: Date.now() })) {
      this.announce.run(run, 'queued', error);
      this.log(run).warn(
        { retry: run.retries + 1, inMs: until - Date.now(), error: logSafe(error) },
        'model unavailable: the run is queued again and retried later',
      );
      this.retryAfter(until - Date.now());
    }
    return undefined;
  }

  /** Plans the reply's deliveries and commits the run's end with them (while the lease holds), then tells. */
  private async recordResult(
    run: Run,
    env: RuntimeEnv,
    prompt: string,
    turn: TurnResult,
    shutdown: Abort,
  ): Promise<void> {
    const { state, reply, error, started } = turn;
    const finishedAt = Date.now();
    const { deliveries, deliveryStatus } =
      reply !== null
        ? await this.planDelivery(run, reply, finishedAt)
        : { deliveries: [], deliveryStatus: `nowhere:${state}` };
    const summary = hookSummary(run.name, reply !== null ? { ok: true, reply } : { ok: false, error: error ?? state });
    let tries = 0; // the outbox is told on the first try only: a retry comes after the claim it would have needed
    let told = false;
    const committed = await writeWhileLeased(
      shutdown,
      () => {
        const written = this.deps.store.completeRun(
          runOutcome(run, this.deps.owner, prompt, turn, {
            finishedAt,
            deliveryStatus,
            deliveries,
            event: summaryEvent(run, summary, env.defaultAgentId, finishedAt),
          }),
        );
        if (++tries === 1 && deliveries.length) told = this.callbacks.onFinishing?.(deliveries) === true;
        return written;
      },
      (n) => backoffMs(n, OUTAGE_BACKOFF),
    );
    if (committed) {
      this.announce.run(run, state, error, finishedAt - started);
      this.announce.queued(deliveries);
    }
    const level = state === 'succeeded' ? 'info' : 'warn';
    this.log(run)[level](
      {
        state,
        attempt: run.attempts,
        ms: finishedAt - started,
        delivery: deliveryStatus,
        ...(error ? { error: logSafe(error) } : {}),
      },
      committed ? 'hook agent run finished' : 'hook agent run finished, but its lease was lost: result dropped',
    );
    this.callbacks.onFinished(run, committed, committed ? deliveries : [], told && tries === 1);
  }

  /** Where the reply goes: nowhere when deliver is off or it is only HEARTBEAT_OK; else one outbox row. */
  private async planDelivery(
    run: Run,
    reply: string,
    at: number,
  ): Promise<{ deliveries: NewDelivery[]; deliveryStatus: string }> {
    const env = this.deps.env();
    const plan = planDelivery({
      reply,
      deliver: run.deliver,
      ackMaxChars: env.config.heartbeat.ackMaxChars,
      channel: run.channel,
      to: run.to,
      accountId: run.accountId,
      lastRoute: run.deliver && readsLastRoute(run) ? await this.deps.store.getRoute(MAIN_SESSION_KEY) : undefined,
      defaultRoute: env.config.channels.default,
      id: newId(),
      origin: {
        runId: run.id,
        heartbeatId: null,
        sessionKey: run.sessionKey,
        agentId: run.agentId,
        hookName: run.name,
      },
      at,
    });
    if (plan.status === 'nowhere:no_route') {
      this.log(run).warn(
        'reply delivered nowhere: no route (the main session has no route and channels.default is not set)',
      );
    }
    return { deliveries: plan.delivery ? [plan.delivery] : [], deliveryStatus: plan.status };
  }

  /** Claim again once a deferred run is due (the poll would find it too, within `pollMs`). */
  private retryAfter(ms: number): void {
    const t = setTimeout(() => this.loop.notify(), Math.max(0, ms) + 10);
    t.unref();
  }

  /**
   * The run's lease could not be kept: stop here without completing or releasing it (another node may have it now,
   * or claims it once the lease lapses; it then runs again, same id). Its reply, if any, is dropped: delivering it
   * here too could deliver it twice.
   */
  private dropLost(run: Run, signal: Abort): undefined {
    this.log(run).warn(
      { attempt: run.attempts, code: 'lease_lost', why: errorMessage(signal.reason) },
      'hook agent run aborted: its lease could not be kept; not completed here, it runs again once the lease lapses',
    );
    return undefined;
  }

  /**
   * The logger of one run: every line carries its `runId`. A child per line written, not per run: most runs write
   * one line (`hook agent run finished`), and one kept per run would be one more object on the run for nothing.
   */
  private log(run: Run): Logger {
    return this.deps.logger.child({ runId: run.id });
  }

  /** Claim no more runs. */
  stop(): void {
    this.loop.stop();
  }

  /** Stop claiming; running runs go on until `deadline` aborts them (they are then released, not failed). */
  async drain(deadline: AbortSignal): Promise<void> {
    await this.loop.drain(deadline);
    this.leases.close();
  }

  close(graceMs = 5000): Promise<void> {
    return drainWithin(graceMs, (deadline) => this.drain(deadline));
  }
}
