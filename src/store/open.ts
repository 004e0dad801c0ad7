import type { RawConfig } from '../config/schema/index.js';
import { DeferredStore } from './deferred.js';
import { errorMessage } from '../text-safe.js';
import { diskFullAtOpen } from './sqlite-files.js';
import { SqliteStore } from './sqlite.js';
import type { SchemaPolicy } from './schema-version.js';
import type { Store } from './types.js';

/** Open the store the config names. Relative SQLite paths resolve against the config's directory. */
export interface OpenStoreOptions {
  /**
   * "migrate" only for `serve` and `hookgate store migrate` (and the destination of `store copy`, which it creates);
   * every other command opens with "current" and is refused an older schema (schema-version.ts).
   */
  schemaPolicy: SchemaPolicy;
  /** Told the schema version found at open and the one the store has now (equal: nothing migrated; found 0: created). */
  onSchema?: (from: number, to: number) => void;
  /** "inline" for short-lived commands (the CLI); the service follows storage.writer. */
  writer?: 'thread' | 'inline';
  /** SQLite: where the admin reads run (SqliteStoreOptions.adminReads): "thread" for the service. */
  adminReads?: 'thread' | 'inline';
  /** Overrides storage.checkpoints ("auto" for short-lived commands): see SqliteStoreOptions.checkpoints. */
  checkpoints?: 'thread' | 'auto';
  /**
   * The service: when the store cannot be opened for a reason that passes (SQLite: its disk is full; PostgreSQL: the
   * server does not answer), return a `DeferredStore` (every call refused with a StoreError, the open retried every
   * second) instead of throwing. Every other failure still throws.
   */
  retryWhenFull?: boolean;
  onWarning?: (message: string) => void;
  onError?: (message: string) => void;
  /** Told how long each group commit took (the service's metrics). */
  onCommit?: (ms: number, ops: number) => void;
  /** Whether the ingress is saturated (the service's IngressPressure; SQLite's group commit reads it). */
  ingressBusy?: () => boolean;
}

export async function openStore(
  storage: RawConfig['storage'],
  resolvePath: (p: string) => string,
  opts: OpenStoreOptions,
): Promise<Store> {
  switch (storage.driver) {
    case 'sqlite': {
      const path = storage.path === ':memory:' ? ':memory:' : resolvePath(storage.path);
      const open = () =>
        new SqliteStore({
          path,
          synchronous: storage.synchronous,
          schemaPolicy: opts.schemaPolicy,
          onSchema: opts.onSchema,
          writer: opts.writer ?? storage.writer ?? (storage.synchronous === 'full' ? 'thread' : 'inline'),
          checkpoints: opts.checkpoints ?? storage.checkpoints,
          ...(opts.onWarning ? { onWarning: opts.onWarning } : {}),
          ...(opts.onError ? { onError: opts.onError } : {}),
          ...(opts.onCommit ? { onCommit: opts.onCommit } : {}),
          ...(opts.ingressBusy ? { ingressBusy: opts.ingressBusy } : {}),
          ...(opts.adminReads ? { adminReads: opts.adminReads } : {}),
        });
      try {
        return open();
      } catch (err) {
        const full = opts.retryWhenFull && path !== ':memory:' ? diskFullAtOpen(err, path) : undefined;
        if (!full) throw err;
        const firstFailure = `${full}: ${(err as Error).message}`;
        return new DeferredStore({
          open,
          firstFailure,
          hint: 'free space on that filesystem',
          shared: false,
          claimRoundTrip: false,
          ...pick(opts),
        });
      }
    }
    case 'postgres': {
      // Imported only here: a service on SQLite never loads pg and the PostgreSQL store.
      const [{ openPostgresStore }, { isConnectionError }] = await Promise.all([
        import('./postgres.js'),
        import('./postgres-connect.js'),
      ]);
      const open = () =>
        openPostgresStore({
          url: storage.url,
          poolSize: storage.poolSize,
          schemaPolicy: opts.schemaPolicy,
          onSchema: opts.onSchema,
          ...(opts.onWarning ? { onWarning: opts.onWarning } : {}),
          ...(opts.onCommit ? { onCommit: opts.onCommit } : {}),
        });
      try {
        return await open();
      } catch (err) {
        // PostgreSQL not answering yet (a node started before the database, or during its restart): serve 503 and
        // keep trying, as a running node does when it loses the server. A refused schema or a bad URL still throws.
        if (!opts.retryWhenFull || !isConnectionError((err as { cause?: unknown }).cause ?? err)) throw err;
        return new DeferredStore({
          open,
          firstFailure: errorMessage(err),
          hint: 'start PostgreSQL or check storage.url',
          shared: true,
          claimRoundTrip: true,
          ...pick(opts),
        });
      }
    }
  }
}

const pick = ({ onWarning, onError }: OpenStoreOptions) => ({
  ...(onWarning ? { onWarning } : {}),
  ...(onError ? { onError } : {}),
});
