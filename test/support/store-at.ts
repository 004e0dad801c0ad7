import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite.js';

/** Runs `fn` with the SQLite store of a hookgate started in `dir` (`data/hookgate.db`), opened inline and closed after. */
export async function withStoreAt<T>(dir: string, fn: (s: SqliteStore) => Promise<T>): Promise<T> {
  const store = new SqliteStore({ path: join(dir, 'data/hookgate.db'), writer: 'inline' });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
