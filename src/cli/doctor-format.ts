/** What `hookgate doctor` prints: one line per finding (`ok|warn|fail  <what>  <detail> → <fix>`), or JSON. */
import type { CheckResult } from '../check.js';
import type { CheckStatus } from '../enums.js';
import { logSafe } from '../text-safe.js';

export interface Finding extends CheckResult {
  /** What was checked: `config`, `store`, `port`, or the config key of a provider or channel (`channels.slack`). */
  what: string;
}

export function finding(status: CheckStatus, what: string, detail: string, fix?: string): Finding {
  return fix ? { status, what, detail, fix } : { status, what, detail };
}

export const fromCheck = (what: string, r: CheckResult): Finding => ({ what, ...r });

export function formatFindings(list: readonly Finding[]): string {
  const width = Math.max(0, ...list.map((f) => f.what.length));
  const lines = list.map((f) => {
    const fix = f.fix && f.status !== 'ok' ? ` → ${f.fix}` : '';
    // Details come from servers and files as well: one safe line each, whatever they held.
    return `${f.status.padEnd(4)}  ${f.what.padEnd(width)}  ${logSafe(`${f.detail}${fix}`, 600)}`;
  });
  const count = (s: CheckStatus) => list.filter((f) => f.status === s).length;
  const failed = count('fail');
  const warned = count('warn');
  lines.push(
    '',
    `${failed ? `${failed} failed` : 'no failures'}, ${warned} warning${warned === 1 ? '' : 's'}, ${count('ok')} ok`,
  );
  return `${lines.join('\n')}\n`;
}
