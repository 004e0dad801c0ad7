/**
 * Files that hold what hookgate keeps (the store, its WAL, the generated hook token) are private to the service's
 * user: directories 0700, files 0600, whatever the umask (umask only clears bits, so the mode is also set
 * explicitly after creating). What already exists is left as it is, and reported instead (`exposedPaths`).
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` and any missing parents at 0700; an existing directory keeps its mode. */
export function ensurePrivateDir(dir: string): void {
  const missing: string[] = [];
  for (let d = dir; !exists(d); d = dirname(d)) {
    missing.push(d);
    if (dirname(d) === d) break;
  }
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  for (const d of missing) chmodSync(d, PRIVATE_DIR_MODE);
}

/** Creates `file` empty at 0600 (its directory at 0700) unless it exists; returns whether it created it. */
export function ensurePrivateFile(file: string): boolean {
  ensurePrivateDir(dirname(file));
  let fd: number;
  try {
    fd = openSync(file, 'wx', PRIVATE_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  closeSync(fd);
  chmodSync(file, PRIVATE_FILE_MODE);
  return true;
}

/** Those of `paths` that exist and that group or others may access, with their mode in octal (`0644`). */
export function exposedPaths(paths: string[]): Array<{ path: string; mode: string }> {
  const out: Array<{ path: string; mode: string }> = [];
  for (const p of paths) {
    let mode: number;
    try {
      mode = statSync(p).mode & 0o777;
    } catch {
      continue;
    }
    if (mode & 0o077) out.push({ path: p, mode: `0${mode.toString(8)}` });
  }
  return out;
}

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}
