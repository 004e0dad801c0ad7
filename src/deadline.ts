/**
 * Aborting work in hand: a run, a heartbeat, a delivery batch, a model attempt. `Abort` is an abort whose
 * `AbortSignal` is made only when something asks for one (a `fetch`, a channel's send): Node 20 builds a signal in
 * about 3 µs (an `EventTarget` given its prototype afterwards, its fields then stored through the runtime), and a run
 * that gave each layer its own signal made three or four, with a listener on the one outside each. Layers inside the
 * runtime pass the `Abort` itself; the signal is made once, at the edge that needs it.
 */
export class Abort {
  private state = false;
  private why: unknown;
  private ctrl: AbortController | undefined;
  private listeners: (() => void)[] | undefined;

  get aborted(): boolean {
    return this.state;
  }

  get reason(): unknown {
    return this.why;
  }

  /** An `AbortSignal` that follows this one (made on first use, then the same one). */
  get signal(): AbortSignal {
    if (!this.ctrl) {
      this.ctrl = new AbortController();
      if (this.state) this.ctrl.abort(this.why);
    }
    return this.ctrl.signal;
  }

  /** Abort (once): with `reason`, else an `AbortError` as `AbortController.abort()` gives. */
  abort(reason?: unknown): void {
    if (this.state) return;
    this.state = true;
    this.why = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
    this.ctrl?.abort(this.why);
    const listeners = this.listeners;
    this.listeners = undefined;
    if (!listeners) return;
    for (const fn of listeners) {
      try {
        fn();
      } catch (err) {
        // As an AbortSignal's listener: the others still run, the caller is not thrown into, and the error is an
        // uncaught exception.
        process.nextTick(() => {
          throw err;
        });
      }
    }
  }

  /** Call `fn` once, when this aborts (not if it already has); returns what cancels that. */
  onAbort(fn: () => void): () => void {
    if (this.state) return noop;
    if (this.listeners) this.listeners.push(fn);
    else this.listeners = [fn];
    return () => {
      const at = this.listeners?.indexOf(fn) ?? -1;
      if (at !== -1) this.listeners!.splice(at, 1);
    };
  }
}

function noop(): void {}

/** What work in hand is aborted by: an `Abort`, or a signal from outside (a caller's, a library's). */
export type AbortLike = AbortSignal | Abort;

/** Call `fn` once when `outer` aborts (not if it already has); returns what cancels that. */
export function whenAborted(outer: AbortLike, fn: () => void): () => void {
  if (outer instanceof Abort) return outer.onAbort(fn);
  if (outer.aborted) return noop;
  outer.addEventListener('abort', fn, { once: true });
  return () => outer.removeEventListener('abort', fn);
}

/**
 * An abort that follows `outer` (with its reason; none: nothing to follow) or fires once `ms` have passed (with
 * `reason()`), whichever comes first, and lets go of `outer` when disposed. Used per model attempt, per run, per
 * heartbeat and per delivery batch instead of `AbortSignal.any` + `AbortSignal.timeout`: Node 20 tracks `any` signals
 * with weak references until they are collected, a cost on every run; this is an `Abort`, a timer and a listener.
 */
export function deadline(
  outer: AbortLike | undefined,
  ms: number | undefined,
  reason: () => unknown,
  opts: { unref?: boolean } = {},
): Deadline {
  return new Deadline(outer, ms, reason, opts.unref ?? false);
}

/** An `Abort` that follows `outer` and can also be aborted on its own (a lease under a stop), until disposed. */
export function following(outer: AbortLike): Deadline {
  return new Deadline(outer, undefined, noop, false);
}

export class Deadline extends Abort {
  private readonly timer: NodeJS.Timeout | undefined;
  private expired = false;
  private readonly release: () => void;

  constructor(outer: AbortLike | undefined, ms: number | undefined, reason: () => unknown, unref: boolean) {
    super();
    if (outer === undefined) {
      this.release = noop;
    } else if (outer.aborted) {
      this.abort(outer.reason);
      this.release = noop;
    } else {
      this.release = whenAborted(outer, () => this.abort(outer.reason));
    }
    this.timer =
      ms === undefined || this.aborted
        ? undefined
        : setTimeout(() => {
            this.expired = true;
            this.abort(reason());
          }, ms);
    if (unref) this.timer?.unref();
  }

  /** Whether it was the time that ran out (not `outer`). */
  get timedOut(): boolean {
    return this.expired;
  }

  /** Clear the timer and the listener on `outer` (call in `finally`). */
  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.release();
  }
}
