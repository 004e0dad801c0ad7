/**
 * Shared helpers of the config tests (not a test file itself: no `.test.ts`).
 * Every parse passes `env` explicitly, so nothing depends on the real environment.
 */
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { type Config, parseConfig } from '../../src/config/load.js';
import { ConfigError, type ConfigIssue } from '../../src/errors.js';

/** A directory that exists but is never written to: config dir for parses that touch no files. */
export const NO_DIR = tmpdir();

/** Parse a config given as an object (serialised as JSON) or as JSON5 text. */
export function parse(input: Record<string, unknown> | string, env: NodeJS.ProcessEnv = {}, dir = NO_DIR): Config {
  const text = typeof input === 'string' ? input : JSON.stringify(input);
  return parseConfig(text, undefined, dir, { env });
}

/** Runs `fn`, asserts it throws a ConfigError, and returns the error. */
export function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    assert.equal(err.code, 'config_invalid');
    return err;
  }
  assert.fail('expected a ConfigError, but the config was accepted');
}

/** The issues of a config that must be rejected. */
export function issuesOf(
  input: Record<string, unknown> | string,
  env: NodeJS.ProcessEnv = {},
  dir = NO_DIR,
): ConfigIssue[] {
  return configError(() => parse(input, env, dir)).issues;
}

/**
 * Asserts that the config is rejected with an issue at exactly `path` whose message matches `message`
 * (a string must be equal; a RegExp must match).
 */
export function assertIssue(
  input: Record<string, unknown> | string,
  path: string,
  message?: string | RegExp,
  env: NodeJS.ProcessEnv = {},
  dir = NO_DIR,
): ConfigIssue[] {
  const issues = issuesOf(input, env, dir);
  const atPath = issues.filter((i) => i.path === path);
  assert.ok(atPath.length > 0, `no issue at "${path}"; issues: ${JSON.stringify(issues)}`);
  if (message !== undefined) {
    const ok = atPath.some((i) => (typeof message === 'string' ? i.message === message : message.test(i.message)));
    assert.ok(ok, `no issue at "${path}" matching ${String(message)}; issues: ${JSON.stringify(issues)}`);
  }
  return issues;
}
