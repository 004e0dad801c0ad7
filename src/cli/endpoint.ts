/**
 * Where a client of the running service (`send`, `tail`) reaches it, and with which token: read from the config's
 * listener keys alone (config/client.ts), so the service's other secrets need not be set in this shell and the
 * config's schema is not loaded. Nothing here creates a token.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ClientConfig, clientToken, embeddedClientConfig, loadClientConfig } from '../config/client.js';
import { embeddedTokenFile, existingEmbeddedToken } from '../config/defaults.js';
import { type ConfigLocation, locateConfigFile } from '../config/locate.js';
import { CliError } from '../errors.js';
import { hostOf } from './config-file.js';
import { announce } from './flags.js';

export function locate(flag: string | undefined): ConfigLocation {
  const loc = locateConfigFile(flag);
  if (loc.file && !existsSync(loc.file))
    throw new CliError('cli_config_missing', `config file ${loc.file} (from ${loc.from}) does not exist`);
  return loc;
}

export const configLabel = (loc: ConfigLocation) =>
  loc.file ? `config ${loc.file} (from ${loc.from})` : 'no config file: the embedded default';

/** The hook listener's base URL (`{hooks.path}` included) as a client on this machine reaches it. */
export function listenerUrl(config: Pick<ClientConfig, 'gateway' | 'hooks'>): string {
  return `http://${hostOf(config.gateway.bind)}:${config.gateway.port}${config.hooks.path}`;
}

/** Base URL and hook token of the running service, as the service itself reads them. Never creates a token. */
export function serviceEndpoint(flag: string | undefined): { config: ClientConfig; url: string; token: string } {
  const location = locate(flag);
  const config = location.file ? loadClientConfig(location.file, 'hooks') : embeddedClientConfig(process.cwd());
  const url = listenerUrl(config);
  let token: string | undefined;
  let from: string;
  if (location.file) {
    const usable = clientToken('hooks', config.hooks, Date.now());
    token = usable?.token;
    from = `${usable?.key ?? 'hooks.token'} of ${location.file}`;
    if (!token)
      throw new CliError(
        'cli_token_missing',
        `no hook token: hooks.token is not set in ${location.file} (from ${location.from}), nor an unexpired hooks.tokens entry; send never makes one up`,
      );
  } else {
    const found = existingEmbeddedToken(process.cwd(), process.env);
    if (!found) {
      throw new CliError(
        'cli_token_missing',
        [
          'no hook token: no config file, $HOOKGATE_TOKEN is not set and the embedded default has no token yet. Looked for:',
          ...[
            ...location.looked,
            '$HOOKGATE_TOKEN (not set)',
            `${embeddedTokenFile(process.cwd())} (no such file)`,
          ].map((l) => `  ${l}`),
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

/** Where the embedded default keeps its generated admin token (the admin listener writes it at its first start). */
export const embeddedAdminTokenFile = (cwd: string) => join(cwd, 'data', 'admin-token');

/** The admin listener's URL and token, as the service reads them. Never creates a token. */
export function adminEndpoint(flag: string | undefined): { url: string; token: string } {
  const location = locate(flag);
  const config = location.file ? loadClientConfig(location.file, 'admin') : embeddedClientConfig(process.cwd());
  const url = `http://${hostOf(config.admin.bind)}:${config.admin.port}`;
  const usable = clientToken('admin', config.admin, Date.now());
  let token = usable?.token;
  let from = `${usable?.key ?? 'admin.token'} of ${location.file}`;
  if (!token && !location.file && process.env.HOOKGATE_ADMIN_TOKEN?.trim()) {
    token = process.env.HOOKGATE_ADMIN_TOKEN.trim();
    from = '$HOOKGATE_ADMIN_TOKEN';
  }
  if (!token && !location.file) {
    const file = embeddedAdminTokenFile(process.cwd());
    token = existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
    from = file;
  }
  if (!token) {
    throw new CliError(
      'cli_token_missing',
      location.file
        ? `no admin token: admin.token is not set in ${location.file} (from ${location.from}), nor an unexpired admin.tokens entry`
        : `no admin token: no config file and no ${embeddedAdminTokenFile(process.cwd())}; run this where \`hookgate serve\` runs, or pass --config FILE`,
    );
  }
  announce(`admin listener ${url}; token from ${from}`);
  return { url, token };
}
