import { z } from 'zod';

// A config is parsed once per load or reload: zod's compiled fast path for objects (a `new Function` per object
// schema, built at its first parse) costs more to build than it saves on one parse. Every schema module imports this
// one, so it applies before any parse.
z.config({ jitless: true });

/** Durations in config: a number of milliseconds, or "500ms", "30s", "5m", "1h", "1d". "0" / "off" → 0 (disabled). */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  const s = value.trim().toLowerCase();
  if (s === 'off' || s === '0') return 0;
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(s);
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Math.round(n * unit);
}

export const durationMs = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseDuration(v);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration like "30s", "5m", "1h" or "off", got ${JSON.stringify(v)}`,
    });
    return z.NEVER;
  }
  return ms;
});

export const nonBlank = z.string().trim().min(1, 'must be a non-empty string');
export const positiveInt = z.number().int().positive();
export const port = z.number().int().min(0).max(65535);
/** A base URL of an HTTP API (a proxy or a local stand-in in tests). */
export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
/** A bare model ref `<provider>/<model>` or an alias; checked against providers and aliases after parsing. */
export const modelRef = nonBlank;
