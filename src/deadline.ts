/**
 * A signal that aborts when `outer` does (with its reason) or once `ms` have passed (with `reason()`), whichever
 * comes first, and lets go of `outer` when disposed. Used per model attempt, per run and per delivery instead of
 * `AbortSignal.any` + `AbortSignal.timeout`: Node 20 tracks `any` signals with weak references until they are
 * collected, and on the run pipeline they were 2–3 % of the profile; this is a controller, a timer and a listener.
 */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Whether it was the time that ran out (not `outer`). */
  readonly timedOut: boolean;
  /** Clear the timer and the listener on `outer` (call in `finally`). */
  dispose(): void;
}

export function deadline(outer: AbortSignal, ms: number | undefined, reason: () => unknown, opts: { unref?: boolean } = {}): Deadline {
  const ctrl = new AbortController();
  const follow = () => ctrl.abort(outer.reason);
  if (outer.aborted) follow();
  else outer.addEventListener('abort', follow, { once: true });
  let timedOut = false;
  const timer =
    ms === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          ctrl.abort(reason());
        }, ms);
  if (opts.unref) timer?.unref();
  return {
    signal: ctrl.signal,
    get timedOut() {
      return timedOut;
    },
    dispose() {
      if (timer) clearTimeout(timer);
      outer.removeEventListener('abort', follow);
    },
  };
}
