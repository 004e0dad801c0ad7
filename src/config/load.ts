import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import JSON5 from 'json5';
import type { z } from 'zod';
import { ConfigError, type ConfigIssue, keyPath } from '../errors.js';
import { interpolate } from './interpolate.js';
import { configSchema, type RawConfig } from './schema/index.js';
import { checkTransformPaths } from './transform-paths.js';
import { crossCheck } from './validate.js';

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
  let parsed: unknown;
  try {
    parsed = text.trim() === '' ? {} : JSON5.parse(text);
  } catch (err) {
    throw new ConfigError([{ path: '', message: `not valid JSON5: ${(err as Error).message}` }], file);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([{ path: '', message: 'the config must be an object' }], file);
  }
  return validateConfig(parsed, file, dir, opts);
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
  return issues.filter((i) => !at.some((h) => i.path === h || i.path.startsWith(`${h}.`) || i.path.startsWith(`${h}[`)));
}

export function loadConfigFile(file: string, opts: LoadOptions = {}): Config {
  const abs = resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (err) {
    throw new ConfigError([{ path: '', message: `cannot read ${abs}: ${(err as NodeJS.ErrnoException).code ?? String(err)}` }], abs);
  }
  return parseConfig(text, abs, dirname(abs), opts);
}

/** `--config`, else `HOOKGATE_CONFIG`, else `./hookgate.json5` when it exists, else undefined (embedded default). */
export function findConfigFile(flag: string | undefined, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string | undefined {
  if (flag) return resolve(cwd, flag);
  if (env.HOOKGATE_CONFIG) return resolve(cwd, env.HOOKGATE_CONFIG);
  const local = resolve(cwd, 'hookgate.json5');
  return existsSync(local) ? local : undefined;
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

function describeIssue(i: { code: string; message: string; keys?: string[] }): string {
  if (i.code === 'unrecognized_keys' && i.keys) return `unknown key${i.keys.length > 1 ? 's' : ''}: ${i.keys.join(', ')}`;
  return i.message;
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
