import type { SqliteStore } from '../../src/store/sqlite.js';
import { openStoreAt } from './runtime-kit.js';

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
