import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { openStoreAt } from './runtime-kit.js';
import { tempDir } from './temp-dir.js';

/**
 * Runs `fn` with the store of a hookgate started in `dir` (`data/hookgate.db`, or its PostgreSQL database under
 * HOOKGATE_TEST_STORE=postgres), opened inline and closed after.
 */
export async function withStoreAt<T>(dir: string, fn: (s: SqliteStore) => Promise<T>): Promise<T> {
  const store = openStoreAt(dir);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** A new directory laid out as a stopped hookgate's (`data/`, 0700), its store filled by `fill`: the CLI's store commands read it. */
export async function storeDirWith(fill: (s: SqliteStore) => Promise<void>): Promise<string> {
  const dir = tempDir();
  mkdirSync(join(dir, 'data'), { mode: 0o700 });
  await withStoreAt(dir, fill);
  return dir;
}
