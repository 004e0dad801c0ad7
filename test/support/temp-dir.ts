/**
 * The one temp-dir helper of the tests. Each test file runs in its own process, so a dir lives until that process
 * exits and is removed then; `removeDir` removes one earlier where a test needs it gone (or a fresh one).
 *
 * Not node:test's `after`: called inside a `before` hook, that runs as soon as the hook ends, before the tests.
 */
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made = new Set<string>();
process.once('exit', () => {
  for (const dir of made) removeDir(dir);
});

/** A fresh, empty directory under the OS temp dir, by its real path (a symlinked /tmp does not disturb path comparisons). */
export function tempDir(prefix = 'hookgate-test-'): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  made.add(dir);
  return dir;
}

/** Removes a directory and all in it now; nothing happens when it is gone already (or `dir` is undefined). */
export function removeDir(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}
