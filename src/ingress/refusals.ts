/**
 * Refused requests are counted, not recorded one by one (docs/operations.md, "Data kept"). A stranger controls the
 * address (through a trusted proxy, a new one per request) and the path (up to the header limit), so one stored
 * record per refusal let anyone grow the store without bound. Here a refusal costs a counter increment in memory;
 * each time window is flushed as one stored row of counts keyed by (status, code, path class, address bucket).
 */
import type { HooksConfig } from '../config/schema/hooks.js';
import type { HttpErrorCode } from '../errors.js';
import { allMappings } from '../hooks/mappings/presets/index.js';
import type { RefusalCount, RefusalWindow } from '../store/types.js';

/** Longest path class kept; a longer sub-path is cut and marked with `…`. */
export const PATH_CLASS_MAX = 64;
/** The path class of a sub-path under no known route, and the key that overflowing counts fold into. */
export const OTHER = 'other';

/**
 * What a refusal's path is counted as: the sub-path, cut to `PATH_CLASS_MAX` characters, when its first segment is a
 * route hookgate has (`known`); else `other`, so probing random paths cannot multiply the keys.
 */
export function pathClass(subPath: string, known: ReadonlySet<string>): string {
  const slash = subPath.indexOf('/');
  const first = slash < 0 ? subPath : subPath.slice(0, slash);
  if (!known.has(first)) return OTHER;
  return subPath.length > PATH_CLASS_MAX ? `${subPath.slice(0, PATH_CLASS_MAX)}…` : subPath;
}

export interface RefusalLimits {
  windowSeconds: number;
  /** Distinct keys per window; past it, new keys fold into one (status, code, `other`, `other`) key. */
  maxKeys: number;
}

/**
 * The in-memory counts of the current window. `add` is all a refusal costs on the request path; `flush` hands the
 * finished window to `write` (the store), and an unref'd timer flushes a window that ended while nothing came in.
 * Memory is bounded: at most `maxKeys` keys, plus one overflow key per (status, code) (codes are a closed list).
 */
export class RefusalAggregator {
  private counts = new Map<string, RefusalCount>();
  private windowStart = 0;
  /** The length of the current window (a reload may change the setting; a window keeps the length it began with). */
  private windowMs = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private limits: RefusalLimits,
    private readonly write: (window: RefusalWindow) => void,
  ) {}

  setLimits(limits: RefusalLimits): void {
    this.limits = limits;
  }

  add(now: number, status: number, code: HttpErrorCode | null, path: string, bucket: string): void {
    if (now >= this.windowStart + this.windowMs || now < this.windowStart) {
      this.flush();
      this.windowMs = this.limits.windowSeconds * 1000;
      this.windowStart = now - (now % this.windowMs);
    }
    const start = this.windowStart;
    const windowMs = this.windowMs;
    let key = `${status}\u0000${code}\u0000${path}\u0000${bucket}`;
    let entry = this.counts.get(key);
    if (!entry && this.counts.size >= this.limits.maxKeys) {
      key = `${status}\u0000${code}\u0000${OTHER}\u0000${OTHER}`;
      entry = this.counts.get(key);
      path = OTHER;
      bucket = OTHER;
    }
    if (entry) entry.count++;
    else this.counts.set(key, { status, code, path, bucket, count: 1 });
    if (!this.timer) {
      // Flush once the window is over even if no refusal comes to roll it; unref'd: it never holds the process.
      this.timer = setTimeout(
        () => {
          this.timer = undefined;
          this.flush();
        },
        start + windowMs - now + 50,
      );
      this.timer.unref();
    }
  }

  /** Hand the current window (if it counted anything) to the store; also at a stop, so no count is lost. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.counts.size === 0) return;
    const counts = [...this.counts.values()];
    this.counts = new Map();
    this.write({ at: this.windowStart, windowMs: this.windowMs, counts });
  }

  get size(): number {
    return this.counts.size;
  }
}

const routeNames = new WeakMap<HooksConfig, ReadonlySet<string>>();

/** The first segments of every route of this config (direct routes, mappings' paths, presets); cached per config. */
export function knownRoutes(hooks: HooksConfig): ReadonlySet<string> {
  let names = routeNames.get(hooks);
  if (!names) {
    const first = (p: string) => p.split('/')[0]!;
    const gmail = hooks.gmail?.account ? ['gmail', first(hooks.gmail.pushPath)] : [];
    names = new Set([
      '',
      'wake',
      'agent',
      ...gmail,
      ...allMappings(hooks)
        .map((m) => first(m.match?.path ?? ''))
        .filter(Boolean),
    ]);
    routeNames.set(hooks, names);
  }
  return names;
}
