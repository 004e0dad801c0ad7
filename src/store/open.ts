import type { RawConfig } from '../config/schema/index.js';
import { openPostgresStore } from './postgres.js';
import { SqliteStore } from './sqlite.js';
import type { Store } from './types.js';

/** Open the store the config names. Relative SQLite paths resolve against the config's directory. */
export interface OpenStoreOptions {
  /** "inline" for short-lived commands (the CLI); the service follows storage.writer. */
  writer?: 'thread' | 'inline';
  /** "thread" (default, the service) or "auto" (short-lived commands): see SqliteStoreOptions.checkpoints. */
  checkpoints?: 'thread' | 'auto';
  onWarning?: (message: string) => void;
  onError?: (message: string) => void;
}

export async function openStore(storage: RawConfig['storage'], resolvePath: (p: string) => string, opts: OpenStoreOptions = {}): Promise<Store> {
  switch (storage.driver) {
    case 'sqlite':
      return new SqliteStore({
        path: storage.path === ':memory:' ? ':memory:' : resolvePath(storage.path),
        synchronous: storage.synchronous,
        writer: opts.writer ?? storage.writer ?? (storage.synchronous === 'full' ? 'thread' : 'inline'),
        checkpoints: opts.checkpoints ?? 'thread',
        ...(opts.onWarning ? { onWarning: opts.onWarning } : {}),
        ...(opts.onError ? { onError: opts.onError } : {}),
      });
    case 'postgres':
      return openPostgresStore({ url: storage.url, poolSize: storage.poolSize, ...(opts.onWarning ? { onWarning: opts.onWarning } : {}) });
  }
}
