/**
 * What an audit record may say about a config: the changes between two generations by key path, with every secret
 * masked. Pure functions (test/audit-diff.test.ts). Generic on purpose: a key added tomorrow whose name looks like a
 * secret is masked without a change here, and a list of objects with an `id` is compared by id.
 */

import { maskUrlsIn, URL_MASK } from './text-safe.js';

/** What a masked value is shown as: the same mask as a URL's secret parts. */
export const MASK = URL_MASK;

/** Keys whose string values are secrets (tokens, secret refs, passwords, API keys, signing secrets, OAuth secrets). */
const SECRET_KEY = /token|secret|passw|pwd|key|auth|credential|cookie|signature|private/i;
/** Containers whose every string is treated as secret: request headers and child-process environments. */
const SECRET_CONTAINER = /^(headers|env)$/i;
/** The keys of a config that are not the config (where it came from, what was derived from it). */
const NOT_CONFIG = new Set(['file', 'dir', 'warnings']);
/** Strings longer than this are shortened in a diff (a template is not worth 10 KB of audit). */
const MAX_STRING = 200;
/** At most this many changes per record; the rest are counted. */
export const MAX_CHANGES = 100;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Keys that look secret by the pattern above but name no secret (a session key is a routing name). */
const NOT_SECRET_KEY = /session_?key|idempotency/i;
/** Inside a secret-named key (a list of tokens), these still show: names and dates, never secrets. */
const NEVER_SECRET = /^(id|name|notAfter|notBefore|expiresAt|enabled)$/;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) && !NOT_SECRET_KEY.test(key);
}

/** Whether strings under `key` are secret, inside a container that `secret` says is (or is not). */
function secretUnder(key: string, secret: boolean): boolean {
  if (secret) return !NEVER_SECRET.test(key);
  return isSecretKey(key) || SECRET_CONTAINER.test(key);
}

function shorten(s: string): string {
  return s.length > MAX_STRING ? `${s.slice(0, MAX_STRING)}… (${s.length} chars)` : s;
}

/**
 * A copy of `value` safe to log and store: strings under a secret-looking key (or inside `headers`/`env`) become
 * `***`, every URL (under any key) is shown as `safeUrl` shows it, long strings shortened; numbers and booleans stay (a count is not a secret).
 */
export function maskSecrets(value: unknown, secret = false): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return secret ? MASK : shorten(maskUrlsIn(value));
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, secret));
  if (typeof value === 'object') {
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (typeof v === 'function' || v === undefined) continue;
      out[k] = maskSecrets(v, secretUnder(k, secret));
    }
    return out;
  }
  return String(value);
}

/** One change of a config, by key path. `from`/`to` are masked; absent on the side where the key did not exist. */
export interface ConfigChange {
  path: string;
  op: 'added' | 'removed' | 'changed';
  from?: Json;
  to?: Json;
}

export interface ConfigDiff {
  changes: ConfigChange[];
  /** Changes past MAX_CHANGES, counted only. */
  more: number;
  /** Lists of tokens (`…tokens`) and single tokens (`…token`) that changed: what `token.rotated` records say. */
  tokens: TokenChange[];
}

export interface TokenChange {
  /** `hooks.tokens`, `admin.token`, ... */
  path: string;
  /** Ids of listed tokens added, removed, or replaced under the same id (never a token). */
  added: string[];
  removed: string[];
  replaced: string[];
  /** A single token (`hooks.token`, `admin.token`): whether it appeared, went or changed. */
  op?: 'added' | 'removed' | 'changed';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const hasIds = (a: unknown[]): a is Array<Record<string, unknown> & { id: string }> =>
  a.length > 0 && a.every((x) => isObject(x) && typeof x.id === 'string');
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const TOKEN_KEY = /tokens?$/i;

/** The changes from config `before` to config `after` (generations of a reload), secrets masked. */
export function diffConfigs(before: unknown, after: unknown): ConfigDiff {
  const changes: ConfigChange[] = [];
  const tokens: TokenChange[] = [];
  let more = 0;
  const push = (c: ConfigChange) => (changes.length < MAX_CHANGES ? changes.push(c) : more++);

  const walk = (a: unknown, b: unknown, path: string, secret: boolean, top: boolean): void => {
    if (same(a, b)) return;
    const key = path.slice(path.lastIndexOf('.') + 1);
    // A list of tokens that appears or goes whole is still named by its ids.
    if (a === undefined && Array.isArray(b) && hasIds(b)) a = [];
    if (b === undefined && Array.isArray(a) && hasIds(a)) b = [];
    // A single token (not one inside a list: that one is named by its id) that appears, goes or changes.
    const scalarToken = TOKEN_KEY.test(key) && !path.includes('[') && (typeof a === 'string' || typeof b === 'string');
    if (scalarToken)
      tokens.push({
        path,
        added: [],
        removed: [],
        replaced: [],
        op: a === undefined ? 'added' : b === undefined ? 'removed' : 'changed',
      });
    if (a === undefined) return void push({ path, op: 'added', to: maskSecrets(b, secret) });
    if (b === undefined) return void push({ path, op: 'removed', from: maskSecrets(a, secret) });
    if (isObject(a) && isObject(b)) {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
        if (top && NOT_CONFIG.has(k)) continue;
        walk(a[k], b[k], path ? `${path}.${k}` : k, secretUnder(k, secret), false);
      }
      return;
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      if ((hasIds(a) || !a.length) && (hasIds(b) || !b.length) && (a.length || b.length)) {
        const before = new Map(a.map((x) => [x.id as string, x]));
        const after = new Map(b.map((x) => [x.id as string, x]));
        const t: TokenChange = { path, added: [], removed: [], replaced: [] };
        for (const [id, x] of before) {
          if (!after.has(id))
            push({ path: `${path}[id=${id}]`, op: 'removed', from: maskSecrets(x, secret) }), t.removed.push(id);
        }
        for (const [id, y] of after) {
          const x = before.get(id);
          if (x === undefined)
            push({ path: `${path}[id=${id}]`, op: 'added', to: maskSecrets(y, secret) }), t.added.push(id);
          else if (!same(x, y)) walk(x, y, `${path}[id=${id}]`, secret, false), t.replaced.push(id);
        }
        if (TOKEN_KEY.test(key)) tokens.push(t);
        return;
      }
      const n = Math.max(a.length, b.length);
      for (let i = 0; i < n; i++) walk(a[i], b[i], `${path}[${i}]`, secret, false);
      return;
    }
    push({ path, op: 'changed', from: maskSecrets(a, secret), to: maskSecrets(b, secret) });
  };
  walk(before, after, '', false, true);
  return { changes, more, tokens };
}
