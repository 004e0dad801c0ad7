/**
 * The repository's root, from any test module. The suite runs compiled (`.test-build/test/…`, see scripts/test.mjs),
 * so a path taken relative to a test module's own URL would point into the build folder, where only compiled
 * TypeScript lives: fixtures, `.mjs` helpers, docs, examples and the source tree are found from the root instead.
 * The root is the nearest folder above this module that holds package.json, in both layouts.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return dir;
}

/** The repository's root folder (absolute, no trailing slash). */
export const ROOT = findRoot();

/** An absolute path under the repository's root: `fromRoot('test/fixtures/senders')`. */
export const fromRoot = (...parts: string[]): string => join(ROOT, ...parts);
