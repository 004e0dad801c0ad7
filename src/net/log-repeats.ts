/**
 * Per-request failure lines, rate-limited. During a store outage or a flood, lines for every refused request would
 * hide everything else in the log and cost more than the refusal. The first line
 * of a kind (same message and code) is logged as it is; repeats within `windowMs` are only counted, and one summary
 * line `<message> repeated N times in the last 10 s` follows when the window ends.
 */
import type { Logger } from 'pino';

export const REPEAT_WINDOW_MS = 10_000;
/** Kinds tracked at once; lines of further kinds (messages that carry varying text) share one overflow entry. */
const MAX_KINDS = 256;
const OVERFLOW = '\u0000overflow';

type Level = 'warn' | 'error';

interface Kind {
  level: Level;
  msg: string;
  code: string;
  since: number;
  repeats: number;
}

export class RepeatLimitedLog {
  private readonly kinds = new Map<string, Kind>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly windowMs = REPEAT_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  warn(code: string, fields: Record<string, unknown>, msg: string): void {
    this.log('warn', code, fields, msg);
  }

  error(code: string, fields: Record<string, unknown>, msg: string): void {
    this.log('error', code, fields, msg);
  }

  private log(level: Level, code: string, fields: Record<string, unknown>, msg: string): void {
    const now = this.now();
    let key = `${level}\u0000${code}\u0000${msg}`;
    let kind = this.kinds.get(key);
    if (!kind && this.kinds.size >= MAX_KINDS) {
      this.sweep(now);
      if (this.kinds.size >= MAX_KINDS) {
        key = OVERFLOW;
        kind = this.kinds.get(key) ?? {
          level: 'warn',
          msg: 'other per-request log lines',
          code: 'overflow',
          since: now,
          repeats: 0,
        };
        this.kinds.set(key, kind);
      }
    }
    if (kind && now - kind.since < this.windowMs) {
      kind.repeats++;
      return;
    }
    if (kind) this.summarize(kind);
    this.kinds.set(key, { level, msg, code, since: now, repeats: 0 });
    this.logger[level]({ ...fields, code }, msg);
    if (!this.timer) {
      // Summaries of windows that ended while nothing more came in; unref'd, so it never holds the process open.
      this.timer = setInterval(() => this.sweep(this.now()), this.windowMs);
      this.timer.unref();
    }
  }

  /** Summarise (and forget) every kind whose window has ended. */
  sweep(now: number): void {
    for (const [key, kind] of this.kinds) {
      if (now - kind.since < this.windowMs) continue;
      this.summarize(kind);
      this.kinds.delete(key);
    }
    if (this.kinds.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private summarize(kind: Kind): void {
    if (kind.repeats === 0) return;
    const seconds = Math.round(this.windowMs / 1000);
    this.logger[kind.level](
      { code: kind.code, repeats: kind.repeats },
      `${kind.msg} repeated ${kind.repeats} times in the last ${seconds} s`,
    );
    kind.repeats = 0;
  }
}
