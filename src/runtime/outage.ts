import { backoffMs } from '../backoff.js';
import type { Logger } from '../log.js';
import { errorMessage, logSafe } from '../text-safe.js';

/** Waits between tries while the store fails: 1 s doubling to 30 s, jittered (many nodes do not retry in step). */
export const OUTAGE_BACKOFF = { baseDelayMs: 1_000, maxDelayMs: 30_000 };

/**
 * One background task's view of store failures: the first failure of an outage is logged (warn, with the error's
 * code), the following ones only counted, and the first success after it logs one line with how long it lasted
 * and how many tries failed. A store that is down for an hour costs two log lines per task, not one a second.
 * `delayMs()` is the backoff before the next try.
 */
export class OutageLog {
  private since: number | undefined;
  private failures = 0;

  constructor(
    private readonly logger: Logger,
    /** What pauses: "claiming runs", "renewing heartbeat leases", ... */
    private readonly what: string,
    private readonly now: () => number = Date.now,
  ) {}

  get down(): boolean {
    return this.since !== undefined;
  }

  /** A try failed: returns the wait before the next one. */
  failed(err: unknown, fields: Record<string, unknown> = {}): number {
    this.failures++;
    const wait = backoffMs(this.failures, OUTAGE_BACKOFF);
    if (this.since === undefined) {
      this.since = this.now();
      const code = (err as { code?: unknown } | null)?.code;
      this.logger.warn(
        {
          ...fields,
          code: typeof code === 'string' ? code : 'error',
          err: logSafe(errorMessage(err)),
          retryInMs: wait,
        },
        `${this.what} failed: paused, retrying with backoff (logged once until it works again)`,
      );
    }
    return wait;
  }

  /** A try worked: ends the outage, if there was one. */
  succeeded(): void {
    if (this.since === undefined) return;
    this.logger.info({ failures: this.failures, ms: this.now() - this.since }, `${this.what} works again: resumed`);
    this.since = undefined;
    this.failures = 0;
  }
}
