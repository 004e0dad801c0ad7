/**
 * The one polling helper of the tests: wait for a condition instead of sleeping a fixed time, so a loaded machine
 * only makes a test slower, never wrong.
 */

export interface WaitOptions {
  /** How long to keep trying before failing (default 10 s). */
  timeoutMs?: number;
  /** The pause between two checks (default 25 ms). */
  intervalMs?: number;
}

/** What a check returns while the condition does not hold yet. */
type NotYet = undefined | null | false;

/**
 * Calls `check` until it returns something other than `undefined`, `null` or `false`, and returns that value (so a
 * check can both test and fetch: `await waitFor('the row', () => store.get(id))`). A check may be async; one that
 * throws or never settles counts as "not yet". After `timeoutMs` it fails with an error naming `what` and the last
 * result (or error) seen. A number as the third argument is the timeout.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | NotYet | Promise<T | NotYet>,
  options: WaitOptions | number = {},
): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 25 } = typeof options === 'number' ? { timeoutMs: options } : options;
  const start = Date.now();
  const stuck = Symbol('stuck');
  let last: unknown;
  for (;;) {
    try {
      // A check that never settles must not hang the test: it counts as "not yet" until the time is up.
      let timer: NodeJS.Timeout | undefined;
      const v = await Promise.race([
        Promise.resolve().then(check),
        new Promise<typeof stuck>(
          (resolve) => (timer = setTimeout(() => resolve(stuck), Math.max(50, timeoutMs - (Date.now() - start)))),
        ),
      ]).finally(() => clearTimeout(timer));
      if (v === stuck) last = 'the check did not settle';
      else if (v !== undefined && v !== null && v !== false) return v as T;
      else last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
