/** What `send hook` and `mappings test` read from the command line: the body, extra headers, the mapping they reach. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../config/load.js';
import { type MappingConfig, normalizeMatchPath } from '../config/schema/hooks.js';
import { CliError } from '../errors.js';
import { isFormContentType, parseFormObject } from '../form-body.js';
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
    throw new CliError(
      'cli_usage',
      `--data ${spec}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
}

export function parseJsonData(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new CliError('cli_usage', `--data is not valid JSON: ${(err as Error).message}`);
  }
}

const FORM = 'application/x-www-form-urlencoded';

/** The body options of `send hook` and `mappings test`. */
export interface BodyOpts {
  data?: string;
  form: string[];
  contentType?: string;
}

/**
 * The request's body, its content type and the payload the service would parse from it: `--data` (JSON unless
 * `--content-type` says otherwise), or `--form` fields (`name=value`, encoded here; `@FILE` for a body already
 * encoded, sent as it is), as a form sender (a Slack slash command) posts them.
 */
export function requestBody(o: BodyOpts): { raw: Buffer; contentType: string; payload: unknown } {
  if (o.form.length > 0) {
    if (o.data !== undefined) throw new CliError('cli_usage', 'give --data or --form, not both');
    if (o.contentType !== undefined && !isFormContentType(o.contentType)) {
      throw new CliError('cli_usage', `--form sends ${FORM}; --content-type ${o.contentType} does not fit it`);
    }
    const raw = Buffer.from(o.form.map(formPart).join('&'));
    return { raw, contentType: o.contentType ?? FORM, payload: parseFormObject(raw) };
  }
  if (o.data === undefined) {
    throw new CliError('cli_usage', 'give the body: --data JSON (or @FILE, or - for stdin), or --form name=value');
  }
  const raw = readData(o.data);
  const contentType = o.contentType ?? 'application/json';
  if (isFormContentType(contentType)) return { raw, contentType, payload: parseFormObject(raw) };
  return { raw, contentType, payload: parseJsonData(raw) };
}

/** One `--form` value: `name=value` encoded, or `@FILE`'s bytes (an encoded body, trailing line break dropped). */
function formPart(spec: string): string {
  if (spec.startsWith('@'))
    return readData(spec)
      .toString('utf8')
      .replace(/\r?\n$/, '');
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new CliError('cli_usage', `--form ${JSON.stringify(spec)}: expected name=value or @FILE`);
  return new URLSearchParams([[spec.slice(0, eq), spec.slice(eq + 1)]]).toString();
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
  const source =
    payload !== null && typeof payload === 'object' && Object.hasOwn(payload, 'source')
      ? (payload as { source: unknown }).source
      : undefined;
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
    const at = p.sender
      ? `hooks.presets[${config.hooks.presets.indexOf(p.sender.entry)}]`
      : `hooks.presets (${p.name})`;
    return { at, mapping: p.mapping };
  }
  return undefined;
}
