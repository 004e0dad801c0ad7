/** Narrowing helpers for replies of unknown shape (JSON from a server). */

export function asRecord(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

export function finiteNumber(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** `{ inputTokens, outputTokens }` from the two counters, or undefined when the server gave neither. */
export function usageOf(input: unknown, output: unknown): { inputTokens?: number; outputTokens?: number } | undefined {
  const inputTokens = finiteNumber(input);
  const outputTokens = finiteNumber(output);
  if (inputTokens === undefined && outputTokens === undefined) return undefined;
  return {
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
  };
}
