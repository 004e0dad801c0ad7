/**
 * A `Retry-After` value in milliseconds: delay-seconds (fractional accepted) or an HTTP date. Used by the providers
 * and the channels alike; undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.ceil(Number(v) * 1000);
  // Every HTTP-date form starts with a day name; Date.parse would read "-5" or "2024" as dates.
  if (!/^[A-Za-z]/.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
