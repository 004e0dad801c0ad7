import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ConfigIssue } from '../errors.js';
import { keyPath } from '../errors.js';

/**
 * Replaces `${VAR}` in every string of a parsed config and resolves secret references:
 * any value written as `{ "env": "NAME" }` or `{ "file": "path" }` (exactly that one key) becomes the
 * variable's value or the file's content (trimmed; relative to the config file's directory).
 * `$${VAR}` stays a literal `${VAR}`. Unset variables are problems reported by key path, never empty strings.
 * `at` is where `value` sits in the file, when it is one section of it (issues are reported by their full path).
 */
export function interpolate(
  value: unknown,
  env: NodeJS.ProcessEnv,
  configDir: string,
  issues: ConfigIssue[],
  at: PropertyKey[] = [],
): unknown {
  return walk(value, at, env, configDir, issues);
}

function walk(
  value: unknown,
  path: PropertyKey[],
  env: NodeJS.ProcessEnv,
  dir: string,
  issues: ConfigIssue[],
): unknown {
  if (typeof value === 'string') return substitute(value, path, env, issues);
  if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, i], env, dir, issues));
  if (value === null || typeof value !== 'object') return value;

  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length === 1 && keys[0] === 'env' && typeof obj.env === 'string') {
    const name = obj.env;
    const v = env[name];
    if (v === undefined || v === '') {
      issues.push({ path: keyPath(path), message: `environment variable ${name} is not set` });
      return undefined;
    }
    return v;
  }
  if (keys.length === 1 && keys[0] === 'file' && typeof obj.file === 'string') {
    const file = resolve(dir, substitute(obj.file, path, env, issues));
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (err) {
      issues.push({
        path: keyPath(path),
        message: `cannot read secret file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
      });
      return undefined;
    }
  }
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = walk(obj[k], [...path, k], env, dir, issues);
  return out;
}

function substitute(s: string, path: PropertyKey[], env: NodeJS.ProcessEnv, issues: ConfigIssue[]): string {
  if (!s.includes('${')) return s;
  return s.replace(/\$?\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (match, name: string) => {
    if (match.startsWith('$$')) return match.slice(1);
    const v = env[name];
    if (v === undefined) {
      issues.push({ path: keyPath(path), message: `environment variable ${name} is not set` });
      return '';
    }
    return v;
  });
}
