/**
 * What a CLI command acts on: the config and store found the way `serve` finds them. Nothing here creates a store,
 * a directory or a token; when there is nothing to act on, the error names what was looked for.
 */
import { existsSync } from 'node:fs';
import { embeddedConfig, existingEmbeddedToken, newToken } from '../config/defaults.js';
import {
  type Config,
  type ConfigLocation,
  configPath,
  loadConfigFile,
  loadStorageConfig,
  validateConfig,
} from '../config/load.js';
import { safeUrl } from '../text-safe.js';
import { CliError } from '../errors.js';
import { configLabel, locate } from './endpoint.js';
import { announce } from './flags.js';
import { openStore, type OpenStoreOptions } from '../store/open.js';
import type { AdminStore } from '../store/pages.js';
import type { AuditStore, ClusterStore, GmailStore, OperatorStore } from '../store/types.js';

/** What the CLI's store commands use: read and repair, the node registry, the figures of `status`, a mailbox's Gmail state, the audit trail. */
// Shared with the commands that load no more than the client's view of the config (endpoint.ts, flags.ts).
export { cliFlags, announce, verbose } from './flags.js';
export { listenerUrl, locate, serviceEndpoint } from './endpoint.js';

export type CliStore = OperatorStore &
  Pick<ClusterStore, 'listNodes' | 'removeNode' | 'shared'> &
  Pick<AdminStore, 'queueDepths' | 'failuresSince'> &
  Pick<GmailStore, 'readGmailStatus'> &
  Pick<AuditStore, 'appendAudit' | 'pageAudit'>;

/** Said by `config check` and `doctor` about an embedded default that has not run in this directory yet. */
export const UNSTARTED_DEFAULT_NOTE =
  'the embedded default has not run here yet: its hooks turn on at the first `hookgate serve`, which writes the hook token to ./data/hook-token (or set $HOOKGATE_TOKEN)';

/**
 * The whole config, for commands that need more than the store (send, sessions route). Creates no token. `unstarted`:
 * the embedded default without its token yet, whose hooks are off only until `serve` creates it.
 */
export function fullConfig(flag: string | undefined): {
  config: Config;
  location: ConfigLocation;
  unstarted?: boolean;
} {
  const location = locate(flag);
  if (location.file) return { config: loadConfigFile(location.file), location };
  const token = existingEmbeddedToken(process.cwd(), process.env)?.token;
  const config = validateConfig(embeddedConfig(token), undefined, process.cwd());
  if (token) return { config, location };
  // Its warnings are those of the default once started: "hooks are off" would send the user to turn on what is on.
  const started = validateConfig(embeddedConfig(newToken()), undefined, process.cwd());
  return { config: { ...config, warnings: started.warnings }, location, unstarted: true };
}

/**
 * Open the store named by the config's storage section (the only part loaded, so the service's other secrets need
 * not be set), after checking that it exists: a command run from the wrong directory must not start an empty one.
 * Its schema must be this hookgate's (StoreSchemaError otherwise): only `store migrate` passes `schemaPolicy: 'migrate'`.
 */
export async function withStore<T>(
  flag: string | undefined,
  fn: (store: CliStore) => Promise<T>,
  opts: Pick<OpenStoreOptions, 'schemaPolicy' | 'onSchema'> = { schemaPolicy: 'current' },
): Promise<T> {
  const location = locate(flag);
  const target = loadStorageConfig(location.file);
  const storage = target.storage;
  if (storage.driver === 'sqlite' && storage.path !== ':memory:') {
    const path = configPath(target, storage.path);
    if (!existsSync(path)) throw storeMissing(location, path);
    announce(`${configLabel(location)}; store ${path}`);
  } else if (storage.driver === 'postgres') {
    announce(`${configLabel(location)}; store ${safeUrl(storage.url)}`);
    await assertPostgresSchema(location, storage.url);
  } else {
    announce(`${configLabel(location)}; store ${storage.driver}`);
  }
  const store = await openStore(storage, (p) => configPath(target, p), {
    writer: 'inline',
    checkpoints: 'auto',
    ...opts,
  });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** A database without hookgate's schema yet: nothing to read (and `store migrate` creates nothing either). */
async function assertPostgresSchema(loc: ConfigLocation, url: string): Promise<void> {
  // Loaded here only: the PostgreSQL client is not loaded by every CLI command.
  const { checkPostgres } = await import('../store/postgres.js');
  const { schemaVersion } = await checkPostgres(url);
  if (schemaVersion !== null) return;
  throw new CliError(
    'cli_store_missing',
    `nothing to read: ${safeUrl(url)} (storage.url of ${loc.file ?? 'the config'}, from ${loc.from}) has no hookgate schema yet; \`hookgate serve\` creates it when it starts`,
  );
}

function storeMissing(loc: ConfigLocation, path: string): CliError {
  if (loc.file) {
    return new CliError(
      'cli_store_missing',
      `no store at ${path} (storage.path of ${loc.file}, from ${loc.from}); \`hookgate serve --config ${loc.file}\` creates it when it starts`,
    );
  }
  return new CliError(
    'cli_store_missing',
    [
      'nothing to read: no config file and no store of the embedded default. Looked for:',
      ...[...loc.looked, `${path} (no such file)`].map((l) => `  ${l}`),
      'Run this where `hookgate serve` runs, or pass --config FILE (or set HOOKGATE_CONFIG).',
    ].join('\n'),
  );
}
