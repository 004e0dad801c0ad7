/**
 * What a client of the running service reads from the config (`hookgate send`, `hookgate tail`): where the two
 * listeners are (`gateway.bind`/`port`, `admin.bind`/`port`), `hooks.path`, and the tokens. Only these keys are
 * interpolated, so an unset `{ env: … }` elsewhere (a signing secret only the service needs) is no error for a client;
 * they are checked here, by key path, without the schema's library, so a client starts fast. `serve` and `config
 * check` validate the whole file with the schema, which takes its defaults from here.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import JSON5 from 'json5';
import { ConfigError, type ConfigIssue, keyPath } from '../errors.js';
import { interpolate } from './interpolate.js';

export const DEFAULT_GATEWAY_BIND = '127.0.0.1';
export const DEFAULT_GATEWAY_PORT = 18789;
export const DEFAULT_ADMIN_BIND = '127.0.0.1';
export const DEFAULT_ADMIN_PORT = 18790;
export const DEFAULT_HOOKS_PATH = '/hooks';

/** `/hooks///` → `/hooks`; `hooks` → `/hooks`; blank → `/hooks`. `/` is rejected by the caller. */
export function normalizeHooksPath(raw: string): string {
  const t = raw.trim();
  if (!t) return DEFAULT_HOOKS_PATH;
  const withSlash = t.startsWith('/') ? t : `/${t}`;
  const stripped = withSlash.replace(/\/+$/, '');
  return stripped === '' ? '/' : stripped;
}

/** `match.path`: compared with the sub-path after `hooks.path`, without leading/trailing slashes. */
export function normalizeMatchPath(raw: string): string {
  return raw.trim().replace(/^\/+/, '').replace(/\/+$/, '');
}

/** Epoch ms of an ISO date-time that names its zone (Z or ±hh:mm), or of a non-negative integer; else undefined. */
export function parseInstant(v: string | number): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  const s = v.trim();
  // A zone is required: a bare local time would expire at a different instant on each machine.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i.test(s)) return undefined;
  const ms = Date.parse(s);
  return Number.isFinite(ms) ? ms : undefined;
}

/** One entry of `hooks.tokens` / `admin.tokens` as a client needs it. */
export interface ClientTokenEntry {
  id: string;
  token: string;
  notAfter?: number | undefined;
}

/**
 * The token a local client of the service uses (`hookgate send`, `hookgate tail`, ...): the single `token` while it
 * is set, else the newest usable entry of `tokens` (the last one listed that has not expired), with where it is.
 */
export function clientToken(
  section: 'hooks' | 'admin',
  s: { token?: string | undefined; tokens?: readonly ClientTokenEntry[] | undefined },
  now: number,
): { token: string; key: string } | undefined {
  if (s.token) return { token: s.token, key: `${section}.token` };
  const list = s.tokens ?? [];
  for (let i = list.length - 1; i >= 0; i--) {
    const t = list[i]!;
    if (t.notAfter === undefined || t.notAfter > now)
      return { token: t.token, key: `${section}.tokens[${i}] (id "${t.id}")` };
  }
  return undefined;
}

export interface ListenerView {
  bind: string;
  port: number;
  token?: string | undefined;
  tokens?: ClientTokenEntry[] | undefined;
}

/** The client's view of a config file (or of the embedded default, `file` undefined). */
export interface ClientConfig {
  readonly file: string | undefined;
  readonly dir: string;
  gateway: { bind: string; port: number };
  hooks: { path: string; token?: string | undefined; tokens?: ClientTokenEntry[] | undefined };
  admin: ListenerView;
}

/** The embedded default as a client sees it (its tokens live beside it, not in it: the caller finds them). */
export function embeddedClientConfig(cwd: string): ClientConfig {
  return {
    file: undefined,
    dir: cwd,
    gateway: { bind: DEFAULT_GATEWAY_BIND, port: DEFAULT_GATEWAY_PORT },
    hooks: { path: DEFAULT_HOOKS_PATH },
    admin: { bind: DEFAULT_ADMIN_BIND, port: DEFAULT_ADMIN_PORT },
  };
}

/** What a client reads of one file: the listener's keys (`gateway`/`hooks`, or `admin`), the others left alone. */
export function loadClientConfig(
  file: string,
  part: 'hooks' | 'admin',
  env: NodeJS.ProcessEnv = process.env,
): ClientConfig {
  const abs = resolve(file);
  const dir = dirname(abs);
  let raw: unknown;
  try {
    const text = readFileSync(abs, 'utf8');
    raw = text.trim() === '' ? {} : JSON5.parse(text);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const message = code ? `cannot read ${abs}: ${code}` : `not valid JSON5: ${(err as Error).message}`;
    throw new ConfigError([{ path: '', message }], abs);
  }
  if (!isRecord(raw)) throw new ConfigError([{ path: '', message: 'the config must be an object' }], abs);
  const issues: ConfigIssue[] = [];
  const r = new Reader(env, dir, issues);
  const config = embeddedClientConfig(dir);
  const out: ClientConfig = { ...config, file: abs };
  if (part === 'hooks') {
    const gateway = r.section(raw, 'gateway');
    const hooks = r.section(raw, 'hooks');
    out.gateway = {
      bind: r.nonBlank(gateway, ['gateway', 'bind'], DEFAULT_GATEWAY_BIND),
      port: r.port(gateway, ['gateway', 'port'], DEFAULT_GATEWAY_PORT),
    };
    const path = normalizeHooksPath(r.string(hooks, ['hooks', 'path']) ?? DEFAULT_HOOKS_PATH);
    if (path === '/') issues.push({ path: 'hooks.path', message: 'may not be "/"' });
    out.hooks = {
      path,
      token: r.string(hooks, ['hooks', 'token'])?.trim() || undefined,
      tokens: r.tokens(hooks, ['hooks', 'tokens']),
    };
  } else {
    const admin = r.section(raw, 'admin');
    out.admin = {
      bind: r.nonBlank(admin, ['admin', 'bind'], DEFAULT_ADMIN_BIND),
      port: r.port(admin, ['admin', 'port'], DEFAULT_ADMIN_PORT),
      token: r.string(admin, ['admin', 'token'])?.trim() || undefined,
      tokens: r.tokens(admin, ['admin', 'tokens']),
    };
  }
  if (issues.length) throw new ConfigError(issues, abs);
  return out;
}

/**
 * Where a secret of a config file comes from, as written there, for a line that names it without printing it:
 * `{ file }` names the file, `{ env }` and `${VAR}` the variable, an inline value the key. `admin.token` unset: the
 * `admin.tokens` list.
 */
export function secretSourceOf(file: string, section: 'hooks' | 'admin'): string {
  const key = `${section}.token`;
  let raw: unknown;
  try {
    raw = JSON5.parse(readFileSync(file, 'utf8'));
  } catch {
    return `${key} in ${file}`;
  }
  const value = isRecord(raw) && isRecord(raw[section]) ? raw[section].token : undefined;
  if (isRecord(value) && typeof value.file === 'string')
    return `${resolve(dirname(file), value.file)} (${key} of ${file})`;
  if (isRecord(value) && typeof value.env === 'string') return `$${value.env} (${key} of ${file})`;
  const variable = typeof value === 'string' ? /^\s*\$\{([A-Za-z_][A-Za-z0-9_]*)\}\s*$/.exec(value)?.[1] : undefined;
  if (variable) return `$${variable} (${key} of ${file})`;
  return value === undefined ? `${section}.tokens in ${file}` : `${key} in ${file}`;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Reads one key at a time: interpolated where it sits, its problems reported by its key path. */
class Reader {
  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly dir: string,
    private readonly issues: ConfigIssue[],
  ) {}

  section(raw: Record<string, unknown>, name: string): Record<string, unknown> {
    const v = raw[name];
    if (v === undefined) return {};
    if (isRecord(v)) return v;
    this.issues.push({ path: name, message: 'must be an object' });
    return {};
  }

  private value(obj: Record<string, unknown>, path: string[]): unknown {
    const key = path[path.length - 1]!;
    if (!Object.hasOwn(obj, key)) return undefined;
    return interpolate(obj[key], this.env, this.dir, this.issues, path);
  }

  string(obj: Record<string, unknown>, path: string[]): string | undefined {
    const v = this.value(obj, path);
    if (v === undefined || typeof v === 'string') return v;
    this.issues.push({ path: keyPath(path), message: 'must be a string' });
    return undefined;
  }

  nonBlank(obj: Record<string, unknown>, path: string[], fallback: string): string {
    const v = this.string(obj, path);
    if (v === undefined) return fallback;
    if (v.trim() === '') this.issues.push({ path: keyPath(path), message: 'must be a non-empty string' });
    return v.trim();
  }

  port(obj: Record<string, unknown>, path: string[], fallback: number): number {
    const v = this.value(obj, path);
    if (v === undefined) return fallback;
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65535) return v;
    this.issues.push({ path: keyPath(path), message: 'must be a port number (an integer from 0 to 65535)' });
    return fallback;
  }

  tokens(obj: Record<string, unknown>, path: string[]): ClientTokenEntry[] | undefined {
    const v = this.value(obj, path);
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) {
      this.issues.push({ path: keyPath(path), message: 'must be a list of { id, token, notAfter? }' });
      return undefined;
    }
    const out: ClientTokenEntry[] = [];
    v.forEach((e: unknown, i) => {
      const at = [...path, i];
      const entry = isRecord(e) ? e : {};
      const id = typeof entry.id === 'string' ? entry.id.trim() : '';
      const token = typeof entry.token === 'string' ? entry.token.trim() : '';
      if (!id) this.issues.push({ path: keyPath([...at, 'id']), message: 'must be a non-empty string' });
      if (!token) this.issues.push({ path: keyPath([...at, 'token']), message: 'must be a non-empty string' });
      let notAfter: number | undefined;
      if (entry.notAfter !== undefined) {
        const v = entry.notAfter;
        notAfter = typeof v === 'string' || typeof v === 'number' ? parseInstant(v) : undefined;
        const message = 'expected an ISO date-time with a zone or epoch milliseconds';
        if (notAfter === undefined) this.issues.push({ path: keyPath([...at, 'notAfter']), message });
      }
      out.push({ id, token, notAfter });
    });
    return out;
  }
}
