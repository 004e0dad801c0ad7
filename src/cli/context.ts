/**
 * What a CLI command acts on: the config and store found the way `serve` finds them. Nothing here creates a store,
 * a directory or a token; when there is nothing to act on, the error names what was looked for.
 */
import { existsSync } from 'node:fs';
import { embeddedConfig, embeddedTokenFile, existingEmbeddedToken } from '../config/defaults.js';
import { type Config, type ConfigLocation, configPath, loadConfigFile, loadStorageConfig, locateConfigFile, validateConfig } from '../config/load.js';
import { safeUrl } from '../text-safe.js';
import { hostOf } from './config-file.js';
import { clientToken } from '../config/schema/tokens.js';
import { CliError } from '../errors.js';
import { openStore, type OpenStoreOptions } from '../store/open.js';
import type { AdminStore } from '../store/pages.js';
import type { AuditStore, ClusterStore, GmailStore, OperatorStore } from '../store/types.js';

/** What the CLI's store commands use: read and repair, the node registry, the figures of `status`, a mailbox's Gmail state, the audit trail. */
export type CliStore = OperatorStore & Pick<ClusterStore, 'listNodes' | 'removeNode' | 'shared'> & Pick<AdminStore, 'queueDepths' | 'failuresSince'> & Pick<GmailStore, 'readGmailStatus'> & Pick<AuditStore, 'appendAudit' | 'pageAudit'>;

/** Set once from the global `--verbose` before a command runs. */
export const cliFlags = { verbose: false };

/** A line for people about what the command uses: with --verbose, or when stderr is a terminal (never in a pipe). */
export function announce(line: string): void {
  if (cliFlags.verbose || process.stderr.isTTY) process.stderr.write(`hookgate: ${line}\n`);
}

/** Only with --verbose (details a script may want on stderr, like the HTTP status). */
export function verbose(line: string): void {
  if (cliFlags.verbose) process.stderr.write(`hookgate: ${line}\n`);
}

export function locate(flag: string | undefined): ConfigLocation {
  const loc = locateConfigFile(flag);
  if (loc.file && !existsSync(loc.file)) throw new CliError('cli_config_missing', `config file ${loc.file} (from ${loc.from}) does not exist`);
  return loc;
}

const configLabel = (loc: ConfigLocation) => (loc.file ? `config ${loc.file} (from ${loc.from})` : 'no config file: the embedded default');

/** The whole config, for commands that need more than the store (send, sessions route). Creates no token. */
export function fullConfig(flag: string | undefined): { config: Config; location: ConfigLocation } {
  const location = locate(flag);
  if (location.file) return { config: loadConfigFile(location.file), location };
  const token = existingEmbeddedToken(process.cwd(), process.env)?.token;
  return { config: validateConfig(embeddedConfig(token), undefined, process.cwd()), location };
}

/**
 * Open the store named by the config's storage section (the only part loaded, so the service's other secrets need
 * not be set), after checking that it exists: a command run from the wrong directory must not start an empty one.
 * Its schema must be this hookgate's (StoreSchemaError otherwise): only `store migrate` passes `schemaPolicy: 'migrate'`.
 */
export async function withStore<T>(flag: string | undefined, fn: (store: CliStore) => Promise<T>, opts: Pick<OpenStoreOptions, 'schemaPolicy' | 'onSchema'> = { schemaPolicy: 'current' }): Promise<T> {
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
  const store = await openStore(storage, (p) => configPath(target, p), { writer: 'inline', checkpoints: 'auto', ...opts });
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

/** The hook listener's base URL (`{hooks.path}` included) as a client on this machine reaches it. */
export function listenerUrl(config: Config): string {
  return `http://${hostOf(config.gateway.bind)}:${config.gateway.port}${config.hooks.path}`;
}

/** Base URL and hook token of the running service, as the service itself reads them. Never creates a token. */
export function serviceEndpoint(flag: string | undefined): { config: Config; url: string; token: string } {
  const { config, location } = fullConfig(flag);
  const url = listenerUrl(config);
  let token: string | undefined;
  let from: string;
  if (location.file) {
    const usable = clientToken('hooks', config.hooks, Date.now());
    token = usable?.token;
    from = `${usable?.key ?? 'hooks.token'} of ${location.file}`;
    if (!token) throw new CliError('cli_token_missing', `no hook token: hooks.token is not set in ${location.file} (from ${location.from}), nor an unexpired hooks.tokens entry; send never makes one up`);
  } else {
    const found = existingEmbeddedToken(process.cwd(), process.env);
    if (!found) {
      throw new CliError(
        'cli_token_missing',
        [
          'no hook token: no config file, $HOOKGATE_TOKEN is not set and the embedded default has no token yet. Looked for:',
          ...[...location.looked, '$HOOKGATE_TOKEN (not set)', `${embeddedTokenFile(process.cwd())} (no such file)`].map((l) => `  ${l}`),
          'Run this where `hookgate serve` runs, or pass --config FILE; send never makes a token up.',
        ].join('\n'),
      );
    }
    token = found.token;
    from = found.from;
  }
  announce(`${configLabel(location)}; token from ${from}`);
  return { config, url, token };
}
