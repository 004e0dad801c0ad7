/**
 * A signal that aborts when `outer` does (with its reason) or once `ms` have passed (with `reason()`), whichever
 * comes first, and lets go of `outer` when disposed. Used per model attempt, per run and per delivery instead of
 * `AbortSignal.any` + `AbortSignal.timeout`: Node 20 tracks `any` signals with weak references until they are
 * collected, a cost on every run; this is a controller, a timer and a listener.
 */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Whether it was the time that ran out (not `outer`). */
  readonly timedOut: boolean;
  /** Clear the timer and the listener on `outer` (call in `finally`). */
  dispose(): void;
}

export function deadline(
  outer: AbortSignal,
  ms: number | undefined,
  reason: () => unknown,
  opts: { unref?: boolean } = {},
): Deadline {
  return new TimedSignal(outer, ms, reason, opts.unref ?? false);
}

/** A class, not an object literal with a getter (a closure and an accessor pair per run and per delivery). */
class TimedSignal implements Deadline {
  private readonly ctrl = new AbortController();
  readonly signal = this.ctrl.signal;
  private readonly timer: NodeJS.Timeout | undefined;
  private expired = false;
  private readonly follow = () => this.ctrl.abort(this.outer.reason);

  constructor(
    private readonly outer: AbortSignal,
    ms: number | undefined,
    reason: () => unknown,
    unref: boolean,
  ) {
    if (outer.aborted) this.follow();
    else outer.addEventListener('abort', this.follow, { once: true });
    this.timer =
      ms === undefined
        ? undefined
        : setTimeout(() => {
            this.expired = true;
            this.ctrl.abort(reason());
          }, ms);
    if (unref) this.timer?.unref();
  }

  get timedOut(): boolean {
    return this.expired;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.outer.removeEventListener('abort', this.follow);
  }
}
