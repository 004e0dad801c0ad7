import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import JSON5 from 'json5';
import type { z } from 'zod';
import { ConfigError, type ConfigIssue, keyPath } from '../errors.js';
import { EMBEDDED_STORAGE } from './defaults.js';
import { interpolate } from './interpolate.js';
import { configSchema, type RawConfig } from './schema/index.js';
import { checkTransformPaths } from './transform-paths.js';
import { crossCheck } from './validate.js';

// Zod-free, for the commands that never load the schema.
export { type ConfigLocation, findConfigFile, locateConfigFile } from './locate.js';

/** A validated config and where it came from. One object per generation: reloads make a new one. */
export interface Config extends RawConfig {
  /** Absolute path of the file, or undefined for the embedded default. */
  readonly file: string | undefined;
  /** Relative paths in the config resolve against this directory. */
  readonly dir: string;
  readonly warnings: readonly string[];
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Checks that need the file system beyond reading secrets (transform paths). Run after the schema. */
  extraChecks?: (config: Config) => ConfigIssue[];
}

/** Parse and validate config text. Throws ConfigError listing every problem by key path. */
export function parseConfig(text: string, file: string | undefined, dir: string, opts: LoadOptions = {}): Config {
  return validateConfig(parseObject(text, file), file, dir, opts);
}

/** The JSON5 text as an object, before interpolation and validation. */
function parseObject(text: string, file: string | undefined): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = text.trim() === '' ? {} : JSON5.parse(text);
  } catch (err) {
    throw new ConfigError([{ path: '', message: `not valid JSON5: ${(err as Error).message}` }], file);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([{ path: '', message: 'the config must be an object' }], file);
  }
  return parsed as Record<string, unknown>;
}

/** Validate an already-parsed config object (the embedded default goes through here too). */
export function validateConfig(input: unknown, file: string | undefined, dir: string, opts: LoadOptions = {}): Config {
  const holes: ConfigIssue[] = [];
  const interpolated = interpolate(input, opts.env ?? process.env, dir, holes);
  const issues: ConfigIssue[] = [];
  const fail = () => new ConfigError(dedupe([...holes, ...withoutHoles(issues, holes)]), file);
  const result = configSchema.safeParse(interpolated);
  if (!result.success) {
    for (const i of result.error.issues) issues.push({ path: keyPath(i.path), message: describeIssue(i) });
    issues.push(...crossCheckPartial(interpolated, new Set(result.error.issues.map((i) => String(i.path[0] ?? '')))));
    throw fail();
  }
  const { issues: crossIssues, warnings } = crossCheck(result.data);
  issues.push(...crossIssues);
  const config: Config = { ...result.data, file, dir, warnings };
  issues.push(...checkTransformPaths(config));
  if (holes.length === 0 && issues.length === 0 && opts.extraChecks) issues.push(...opts.extraChecks(config));
  if (holes.length || issues.length) throw fail();
  return config;
}

/**
 * A value that could not be interpolated (an unset variable, an unreadable file) is reported once, by the
 * interpolation: what the schema and the cross-key rules say about the hole it left at that key only repeats it.
 */
function withoutHoles(issues: ConfigIssue[], holes: ConfigIssue[]): ConfigIssue[] {
  const at = holes.map((h) => h.path);
  return issues.filter(
    (i) => !at.some((h) => i.path === h || i.path.startsWith(`${h}.`) || i.path.startsWith(`${h}[`)),
  );
}

export function loadConfigFile(file: string, opts: LoadOptions = {}): Config {
  const abs = resolve(file);
  return parseConfig(readConfigText(abs), abs, dirname(abs), opts);
}

function readConfigText(abs: string): string {
  try {
    return readFileSync(abs, 'utf8');
  } catch (err) {
    throw new ConfigError(
      [{ path: '', message: `cannot read ${abs}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` }],
      abs,
    );
  }
}

export type StorageConfig = RawConfig['storage'];

/** Only the storage section of a config file, with its directory (relative store paths resolve against it). */
export interface StorageOnly {
  /** Undefined for the embedded default (its store is relative to the working directory). */
  readonly file: string | undefined;
  readonly dir: string;
  readonly storage: StorageConfig;
}

/**
 * The narrow load for commands that only read the store: the same JSON5 parse and `${ENV}` interpolation, applied
 * to the storage section alone, so a shell without the service's secrets (a channel token, a signing secret) can
 * still read it. Problems in that section are reported by key path (`storage.path: ...`); the rest is not checked.
 */
export function loadStorageConfig(
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): StorageOnly {
  if (file === undefined) return { file, dir: cwd, storage: configSchema.shape.storage.parse({ ...EMBEDDED_STORAGE }) };
  const { dir, value } = loadConfigSection(file, 'storage', env, cwd);
  return { file: resolve(cwd, file), dir, storage: value };
}

/**
 * One section of a config file, interpolated and validated alone (problems reported by key path, `hooks.…`); the
 * other sections are not read, so their unset variables are no error for a command that does not use them.
 */
export function loadConfigSection<K extends keyof RawConfig>(
  file: string,
  key: K,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): { dir: string; value: RawConfig[K] } {
  const abs = resolve(cwd, file);
  const obj = parseObject(readConfigText(abs), abs);
  const issues: ConfigIssue[] = [];
  const section = interpolate(obj[key], env, dirname(abs), issues, [key]);
  if (issues.length) throw new ConfigError(issues, abs);
  const result = (configSchema.shape[key] as unknown as z.ZodType<RawConfig[K]>).safeParse(section);
  if (!result.success)
    throw new ConfigError(
      result.error.issues.map((i) => ({
        path: keyPath([key, ...i.path]),
        message: describeIssue({ ...i, path: [key, ...i.path] }),
      })),
      abs,
    );
  return { dir: dirname(abs), value: result.data };
}

/** Resolve a path from the config against the config's directory. */
export function configPath(config: Pick<Config, 'dir'>, p: string): string {
  return resolve(config.dir, p);
}

/**
 * Every problem at once: when some sections fail the schema, the cross-key rules still run on the sections that
 * passed (failed ones replaced by their defaults), and only their findings about passing sections are kept.
 */
function crossCheckPartial(input: unknown, failed: Set<string>): ConfigIssue[] {
  if (failed.has('') || !input || typeof input !== 'object') return [];
  const obj = input as Record<string, unknown>;
  const partial: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(configSchema.shape)) {
    const r = (schema as z.ZodType).safeParse(failed.has(key) ? undefined : obj[key]);
    if (!r.success) return [];
    partial[key] = r.data;
  }
  return crossCheck(partial as RawConfig).issues.filter((i) => !failed.has(i.path.split(/[.[]/)[0] ?? ''));
}

function describeIssue(i: { code: string; message: string; keys?: string[]; path?: PropertyKey[] }): string {
  if (i.code === 'unrecognized_keys' && i.keys) {
    const known = knownKeysAt(i.path ?? []);
    const named = i.keys.map((k) => {
      const near = closestKey(k, known);
      return near ? `${k} (did you mean "${near}"?)` : k;
    });
    return `unknown key${i.keys.length > 1 ? 's' : ''}: ${named.join(', ')}`;
  }
  return i.message;
}

/** The keys the schema knows for the object at `path` of the config (an issue's path), for a "did you mean". */
function knownKeysAt(path: readonly PropertyKey[]): string[] {
  let schemas: unknown[] = [configSchema];
  for (const segment of path) {
    schemas = schemas.flatMap((s) =>
      through(s, (d) => {
        if (d.type === 'array' && typeof segment === 'number') return [d.element];
        if (d.type === 'record') return [d.valueType];
        if (d.type === 'object' && typeof segment === 'string')
          return d.shape?.[segment] === undefined ? [] : [d.shape[segment]];
        return undefined;
      }),
    );
  }
  return [
    ...new Set(
      schemas.flatMap((s) => through(s, (d) => (d.type === 'object' ? Object.keys(d.shape ?? {}) : undefined))),
    ),
  ] as string[];
}

interface SchemaDef {
  type?: string;
  shape?: Record<string, unknown>;
  innerType?: unknown;
  in?: unknown;
  out?: unknown;
  element?: unknown;
  options?: unknown[];
  valueType?: unknown;
  left?: unknown;
  right?: unknown;
}
const defOf = (s: unknown): SchemaDef => (s as { _zod?: { def?: SchemaDef } })?._zod?.def ?? {};

/** What `pick` finds in a schema, looking through its wrappers (optional, default, pipes, unions) until it does. */
function through(s: unknown, pick: (d: SchemaDef) => unknown[] | undefined, depth = 0): unknown[] {
  const d = defOf(s);
  const found = pick(d);
  if (found) return found;
  if (depth > 10) return [];
  const inner = [d.innerType, d.in, d.out, d.left, d.right, ...(d.options ?? [])].filter((x) => x !== undefined);
  return inner.flatMap((x) => through(x, pick, depth + 1));
}

/** The known key nearest to a misspelt one (a typo, a swapped pair of letters), if any is near enough. */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; d: number } | undefined;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k.toLowerCase());
    if (d <= Math.max(1, Math.min(2, Math.floor(k.length / 3))) && (!best || d < best.d)) best = { key: k, d };
  }
  return best?.key;
}

/** Edits (insert, delete, replace, swap two neighbours) between two strings. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

function dedupe(issues: ConfigIssue[]): ConfigIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const k = `${i.path}\0${i.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
