import { logSafe } from '../text-safe.js';

/** Plain-text tables for people; every list command also has --json for scripts. */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  const s = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
  return logSafe(s, 60);
}

export function time(ms: number | null | undefined): string {
  return ms
    ? new Date(ms)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z')
    : '-';
}

export function printJson(v: unknown): void {
  process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
}

/** A session's route for people: `telegram → 1001`, with `(account alerts)` when not the default account. */
export function routeText(channel: string, to: string, accountId: string | null): string {
  return `${channel} → ${to}${accountId ? ` (account ${accountId})` : ''}`;
}
