/**
 * Filesystem faults for the store tests: a small tmpfs (a disk that fills) and `chattr +i` (immutable files). Both
 * need root (CI runs as root); without it the tests are skipped with the reason, and with
 * HOOKGATE_REQUIRE_SERVICES=1 a missing capability is an error instead, so CI cannot pass by skipping.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';

function unavailable(what: string, err: unknown): string {
  const why = `${what} is not permitted here (${String((err as Error).message ?? err).split('\n')[0]})`;
  if (process.env.HOOKGATE_REQUIRE_SERVICES === '1')
    throw new Error(`HOOKGATE_REQUIRE_SERVICES=1 but ${why}: the store fault tests cannot run`);
  return `${why}; skipping (run as root)`;
}

/** Mount a tmpfs of `sizeMiB` at `dir` (created); the skip reason when that is not permitted. */
export function mountTmpfs(dir: string, sizeMiB: number): { skip?: string; unmount: () => void } {
  mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    return { skip: unavailable('mount -t tmpfs', err), unmount: () => {} };
  }
  return { unmount: () => execFileSync('umount', ['-l', dir], { stdio: 'pipe' }) };
}

/**
 * A directory on a filesystem where `chattr +i` works (tmpfs does not support it: /var/tmp is usually on disk), and
 * `chattr`; the skip reason otherwise. `set(path, on)` sets or clears the immutable flag.
 */
export function immutableCapable(): { dir?: string; skip?: string; set: (path: string, on: boolean) => void } {
  const set = (path: string, on: boolean) => execFileSync('chattr', [on ? '+i' : '-i', path], { stdio: 'pipe' });
  let dir: string | undefined;
  try {
    dir = mkdtempSync(join('/var/tmp', 'hookgate-chattr-'));
    const probe = join(dir, 'probe');
    execFileSync('touch', [probe]);
    set(probe, true);
    set(probe, false);
    rmSync(probe);
  } catch (err) {
    if (dir) rmSync(dir, { recursive: true, force: true });
    return { skip: unavailable('chattr +i on /var/tmp', err), set };
  }
  const made = dir;
  process.once('exit', () => rmSync(made, { recursive: true, force: true }));
  return { dir: made, set };
}
