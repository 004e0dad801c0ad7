/**
 * Environment files as systemd's EnvironmentFile= reads them (the common part: `NAME=value` lines, `#` and `;`
 * comments, an optional `export`, a value in matching quotes). `init --service` writes one; `doctor` reads it to check
 * the config as the service will see it.
 */
import { readFileSync } from 'node:fs';

const LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/;

export function parseEnvFile(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*[#;]/.test(line)) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const raw = m[2]!;
    const quoted = raw.length >= 2 && (raw[0] === '"' || raw[0] === "'") && raw.endsWith(raw[0]!);
    out.set(m[1]!, quoted ? raw.slice(1, -1) : raw);
  }
  return out;
}

/** The file's variables, or undefined when it cannot be read (the caller reports that). */
export function readEnvFile(file: string): Map<string, string> | undefined {
  try {
    return parseEnvFile(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}
