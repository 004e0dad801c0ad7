/**
 * The config file a setup command writes into (`gmail setup`, `connect`): found as `serve` finds it, read as written
 * (not validated: setup must work before the rest of the config is complete, its secrets set).
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import JSON5 from 'json5';
import type { ConfigLocation } from '../config/load.js';
import { normalizeHooksPath } from '../config/client.js';
import { CliError } from '../errors.js';

/** The config file to write `what` into; a clear error naming what was looked for when there is none. */
export function requireConfigFile(loc: ConfigLocation, what: string, otherwise = 'or pass --config FILE.'): string {
  if (loc.file) {
    try {
      if (statSync(loc.file).isFile()) return loc.file;
    } catch {
      // reported below
    }
    const missing = `config file ${loc.file} (from ${loc.from}) does not exist; \`hookgate init ${loc.file}\` writes one`;
    throw new CliError('cli_config_missing', missing);
  }
  throw new CliError(
    'cli_config_missing',
    [
      `no config file to write ${what} into (the embedded default has none). Looked for:`,
      ...loc.looked.map((l) => `  ${l}`),
      `\`hookgate init\` writes one; ${otherwise}`,
    ].join('\n'),
  );
}

/** The file parsed as JSON5, as written (no `${ENV}`, no secret reference resolved). */
export function rawConfig(file: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON5.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CliError('cli_usage', `${file} is not valid JSON5: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CliError('cli_usage', `${file} is not a JSON5 object`);
  }
  return parsed as Record<string, unknown>;
}

const record = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
/** `${VAR}` replaced from this shell's environment (unset: empty), for the few keys read as written. */
const expand = (s: string) =>
  s.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => process.env[name] ?? '');

/** `hooks.path` as written in `raw` (default `/hooks`). */
export function hooksPathOf(raw: Record<string, unknown>, file: string): string {
  const value = record(raw.hooks).path;
  if (typeof value !== 'string') return '/hooks';
  const path = normalizeHooksPath(expand(value));
  if (path === '/') throw new CliError('cli_usage', `${file}: hooks.path may not be "/"`);
  return path;
}

/** The hook listener's own base URL as written in `raw` (`gateway.bind`, `gateway.port`), with `hooks.path`. */
export function listenerUrlOf(raw: Record<string, unknown>, file: string): string {
  const gateway = record(raw.gateway);
  const bind = typeof gateway.bind === 'string' ? expand(gateway.bind) : '127.0.0.1';
  const port =
    typeof gateway.port === 'number'
      ? gateway.port
      : typeof gateway.port === 'string'
        ? Number(expand(gateway.port))
        : 18789;
  return `http://${hostOf(bind)}:${port}${hooksPathOf(raw, file)}`;
}

/** The host a client on this machine reaches a listener bound to `bind` at (any address: loopback). */
export function hostOf(bind: string): string {
  return bind === '0.0.0.0' ? '127.0.0.1' : bind === '::' ? '[::1]' : bind.includes(':') ? `[${bind}]` : bind;
}

/**
 * An environment where every variable is set: checking an edited file, its secrets' variables are the service's
 * business, not this shell's.
 */
export function anyEnv(): NodeJS.ProcessEnv {
  return new Proxy(
    { ...process.env },
    { get: (t, k) => (typeof k === 'string' ? (t[k] ?? 'set-by-the-service') : undefined) },
  );
}

/** Where hookgate keeps its files: the SQLite store's directory (`./data` by default), else `./data` by the config file. */
export function dataDirOf(raw: Record<string, unknown>, configDir: string): string {
  const storage = record(raw.storage);
  const path = storage.driver === undefined || storage.driver === 'sqlite' ? storage.path : undefined;
  if (typeof path === 'string' && path !== ':memory:' && path.trim() !== '')
    return dirname(resolve(configDir, expand(path)));
  return join(configDir, 'data');
}
