/** What `send hook` and `mappings test` read from the command line: the body, extra headers, the mapping they reach. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../config/load.js';
import { type MappingConfig, normalizeMatchPath } from '../config/schema/hooks.js';
import { CliError } from '../errors.js';
import { headersMatch } from '../hooks/mappings/compile.js';
import { presetMappings } from '../hooks/mappings/presets/index.js';
import { compileSender } from '../hooks/mappings/presets/sender.js';

export { collect } from './options.js';

/** `-H name:value` → `[name (lower-case), value]`. */
export function parseHeader(h: string): [string, string] {
  const colon = h.indexOf(':');
  if (colon <= 0) throw new CliError('cli_usage', `--header ${JSON.stringify(h)}: expected name:value`);
  return [h.slice(0, colon).trim().toLowerCase(), h.slice(colon + 1).trim()];
}

/** `--data`: inline text, `@file`, or `-` for stdin. The bytes are kept as they are (a signature covers them). */
export function readData(spec: string): Buffer {
  if (spec === '-') return readFileSync(0);
  if (!spec.startsWith('@')) return Buffer.from(spec);
  const file = resolve(spec.slice(1));
  try {
    return readFileSync(file);
  } catch (err) {
    throw new CliError('cli_usage', `--data ${spec}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

export function parseJsonData(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new CliError('cli_usage', `--data is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * The mapping the service would pick for this request: the first in config order matching path, `source` and
 * `match.headers`, then the presets (a sender preset: its path and event types); `at` names it in the config.
 */
export function matchingMapping(
  config: Pick<Config, 'hooks'>,
  name: string,
  payload: unknown,
  headers: Record<string, string>,
): { at: string; mapping: MappingConfig } | undefined {
  const subPath = normalizeMatchPath(name);
  const source = payload !== null && typeof payload === 'object' && Object.hasOwn(payload, 'source') ? (payload as { source: unknown }).source : undefined;
  const matches = (m: MappingConfig) =>
    (m.match?.path === undefined || m.match.path === subPath) &&
    (m.match?.source === undefined || m.match.source === source) &&
    (m.match?.headers === undefined || headersMatch(Object.entries(m.match.headers), headers));
  const index = config.hooks.mappings.findIndex(matches);
  const mapping = config.hooks.mappings[index];
  if (mapping) return { at: `hooks.mappings[${index}]`, mapping };
  const body = payload !== null && typeof payload === 'object' ? (payload as Record<string, unknown>) : {};
  for (const p of presetMappings(config.hooks)) {
    if (!matches(p.mapping)) continue;
    if (p.sender) {
      const { events } = compileSender(p.sender.preset, p.sender.entry);
      if (!events.takes(events.of(body, headers))) continue;
    }
    const at = p.sender ? `hooks.presets[${config.hooks.presets.indexOf(p.sender.entry)}]` : `hooks.presets (${p.name})`;
    return { at, mapping: p.mapping };
  }
  return undefined;
}
