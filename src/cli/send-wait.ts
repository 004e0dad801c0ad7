/**
 * `hookgate send agent --wait`: the run's progress on stderr while the answer is held, and an exit code that says how
 * the run ended. The progress comes from the admin API's record of the run (`GET /api/v1/runs/:id`); without the admin
 * listener the wait is silent, as before, and the exit code still tells.
 */
import { request } from '../http/client.js';
import { logSafe } from '../text-safe.js';

/** How a `--wait` ended, as its exit code. 1 stays the CLI's own: a refused request, no service, a usage error. */
export const WAIT_EXIT = {
  /** The run succeeded; its reply was handed to the outbox, or held back on purpose (`--no-deliver`, HEARTBEAT_OK). */
  ok: 0,
  /** The run failed or timed out (a model that stayed down included). */
  runError: 2,
  /** The run succeeded but its reply goes nowhere (no route for `channel: last`). */
  undelivered: 3,
  /** The wait ended (hooks.maxWaitSeconds) before the run did; it goes on. */
  pending: 4,
} as const;

interface Completion {
  status?: unknown;
  deliveryStatus?: unknown;
}

/** The exit code of a held answer's `completion`. */
export function waitExitCode(completion: Completion | undefined): number {
  if (!completion || completion.status === 'pending') return WAIT_EXIT.pending;
  if (completion.status !== 'ok') return WAIT_EXIT.runError;
  const delivery = typeof completion.deliveryStatus === 'string' ? completion.deliveryStatus : '';
  return delivery === 'outbox' || delivery.startsWith('suppressed:') ? WAIT_EXIT.ok : WAIT_EXIT.undelivered;
}

/** What the admin API says of a run, as far as progress needs it. */
export interface RunRecord {
  state: string;
  attempts?: number;
  /** Times it was given back after a transient model failure. */
  retries?: number;
  error?: string | null;
  nextAttemptAt?: number | null;
  deliveryStatus?: string | null;
}

/** One progress line of a run's record (without the countdown's moving part when `now` is left out). */
export function progressLine(run: RunRecord, now: number): string {
  const error = run.error ? logSafe(run.error) : '';
  switch (run.state) {
    case 'queued': {
      if (!error) return 'queued';
      const wait = run.nextAttemptAt ? Math.max(0, Math.ceil((run.nextAttemptAt - now) / 1000)) : 0;
      return `retrying: ${error}; next try in ${wait} s`;
    }
    case 'running':
      return run.retries ? `running (try ${run.retries + 1})` : 'running';
    case 'succeeded':
      return `done: succeeded${run.deliveryStatus ? ` (reply: ${logSafe(run.deliveryStatus)})` : ''}`;
    default:
      return `done: ${logSafe(run.state)}${error ? `: ${error}` : ''}`;
  }
}

/** What makes a new line: a change of state, of the reason or of the next try, never the countdown alone. */
const changeKey = (r: RunRecord) =>
  JSON.stringify([r.state, r.attempts, r.retries, r.error ?? null, r.nextAttemptAt ?? null]);

export interface Progress {
  /** Stops polling; prints the run's final line (fetched once more) when it changed. */
  stop(): Promise<void>;
}

/**
 * Polls the run's record every `everyMs` and writes a line per change to `out`. On a terminal, the line of a run that
 * waits for its next try counts down in place; elsewhere (a file, a pipe) it is written once per change.
 */
export function followRun(
  admin: { url: string; token: string },
  runId: string,
  out: NodeJS.WriteStream,
  opts: { everyMs?: number; now?: () => number } = {},
): Progress {
  const now = opts.now ?? Date.now;
  const tty = out.isTTY === true;
  const prefix = `run ${runId}: `;
  let last = '';
  let shown: RunRecord | undefined;
  let open = false; // a countdown line without its newline yet
  let failed = false;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let inFlight: Promise<void> = Promise.resolve();

  const write = (line: string, fresh: boolean) => {
    if (tty && open) out.write(fresh ? '\n' : '\r\x1b[K');
    out.write(`${prefix}${line}`);
    open = tty;
    if (!tty) out.write('\n');
  };
  const poll = async () => {
    const res = await request(
      `${admin.url}/api/v1/runs/${encodeURIComponent(runId)}`,
      {
        method: 'GET',
        headers: { authorization: `Bearer ${admin.token}` },
      },
      { timeoutMs: 5000 },
    );
    if (res.kind !== 'response' || res.status !== 200) {
      if (!failed) {
        failed = true;
        const why = res.kind === 'response' ? `answered ${res.status}` : res.kind === 'network' ? res.code : res.kind;
        if (tty && open) out.write('\n');
        open = false;
        out.write(`hookgate: no progress to show: the admin listener ${admin.url} ${why}; still waiting\n`);
      }
      return;
    }
    const run = answerBody(res.text) as RunRecord | undefined;
    if (!run) return;
    const key = changeKey(run);
    if (key !== last) {
      last = key;
      shown = run;
      write(progressLine(run, now()), true);
    } else if (tty && shown?.state === 'queued' && shown.error) {
      write(progressLine(shown, now()), false);
    }
  };
  const tick = () => {
    inFlight = poll()
      .catch(() => undefined)
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, opts.everyMs ?? 1000);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
      if (!failed) await poll().catch(() => undefined);
      if (tty && open) out.write('\n');
      open = false;
    },
  };
}

/** A JSON answer's object, or undefined for anything else. */
export function answerBody(text: string): Record<string, unknown> | undefined {
  try {
    const body: unknown = JSON.parse(text);
    const isObject = body !== null && typeof body === 'object' && !Array.isArray(body);
    return isObject ? (body as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
