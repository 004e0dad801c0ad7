/**
 * `hookgate doctor`: the SQLite driver's native module (better-sqlite3). It is loaded the way the store loads it;
 * the finding says its version, the Node ABI it must match, whether it was compiled here or downloaded prebuilt, and
 * when it does not load, what to do about it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { type Finding, finding } from './doctor-format.js';

const require = createRequire(import.meta.url);

export const REBUILD_FIX =
  'npm rebuild better-sqlite3 in the checkout (compiling needs python3, make and a C++ compiler: apt install python3 make g++)';

export interface NativeState {
  version?: string;
  /** Compiled on this machine by node-gyp (its object files are there), or a prebuilt binary. */
  fromSource?: boolean;
  sqlite?: string;
  error?: { code: string };
}

/** Loads better-sqlite3 and opens an in-memory database; never throws. */
export function probeNative(): NativeState {
  let pkgDir: string;
  let version: string | undefined;
  try {
    const pkg = require.resolve('better-sqlite3/package.json');
    pkgDir = dirname(pkg);
    version = (JSON.parse(readFileSync(pkg, 'utf8')) as { version?: string }).version;
  } catch (err) {
    return { error: { code: (err as NodeJS.ErrnoException).code ?? 'MODULE_NOT_FOUND' } };
  }
  const fromSource = existsSync(join(pkgDir, 'build', 'Release', 'obj.target'));
  try {
    const Database = require('better-sqlite3') as new (
      f: string,
    ) => { prepare(s: string): { pluck(): { get(): unknown } }; close(): void };
    const db = new Database(':memory:');
    const sqlite = String(db.prepare('select sqlite_version()').pluck().get());
    db.close();
    return { version, fromSource, sqlite };
  } catch (err) {
    // `bindings` throws a plain Error (no code) when no compiled module is found at all.
    return { version, fromSource, error: { code: (err as NodeJS.ErrnoException).code ?? 'NOT_BUILT' } };
  }
}

/** `required`: the config's store is SQLite (a PostgreSQL store does not load the module to serve). */
export function nativeFinding(state: NativeState, required: boolean): Finding {
  const abi = `Node ${process.version}, module ABI ${process.versions.modules}`;
  const how =
    state.fromSource === undefined ? '' : state.fromSource ? '; compiled here from source' : '; prebuilt binary';
  if (!state.error)
    return finding(
      'ok',
      'sqlite driver',
      `better-sqlite3 ${state.version} loads (SQLite ${state.sqlite}; ${abi}${how})`,
    );
  const status = required ? 'fail' : 'warn';
  const name = `better-sqlite3${state.version ? ` ${state.version}` : ''}`;
  switch (state.error.code) {
    case 'MODULE_NOT_FOUND':
      return finding(
        status,
        'sqlite driver',
        `better-sqlite3 is not installed (${state.error.code})`,
        'npm ci in the checkout',
      );
    case 'ERR_DLOPEN_FAILED':
      return finding(
        status,
        'sqlite driver',
        `${name} does not load (${state.error.code}): built for another Node or system (${abi}${how})`,
        REBUILD_FIX,
      );
    default:
      return finding(
        status,
        'sqlite driver',
        `${name} does not load (${state.error.code}): its native module was not built (${abi})`,
        REBUILD_FIX,
      );
  }
}
