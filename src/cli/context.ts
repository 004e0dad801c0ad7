import { readFileSync } from 'node:fs';
import { embeddedTokenFile } from '../config/defaults.js';
import { type Config, configPath, findConfigFile } from '../config/load.js';
import { loadServeConfig } from '../config/serve-config.js';
import { openStore } from '../store/open.js';
import type { OperatorStore } from '../store/types.js';

/** The config a CLI command acts on: `--config`, `HOOKGATE_CONFIG`, `./hookgate.json5`, else the embedded default. */
export function cliConfig(flag: string | undefined): Config {
  const file = findConfigFile(flag);
  return loadServeConfig(file, process.cwd(), process.env).config;
}

export async function withStore<T>(flag: string | undefined, fn: (store: OperatorStore, config: Config) => Promise<T>): Promise<T> {
  const config = cliConfig(flag);
  const store = await openStore(config.storage, (p) => configPath(config, p), { writer: 'inline', checkpoints: 'auto' });
  try {
    return await fn(store, config);
  } finally {
    await store.close();
  }
}

/** Base URL and token of the running service, from the config. */
export function serviceEndpoint(config: Config): { url: string; token: string | undefined } {
  const bind = config.gateway.bind;
  const host = bind === '0.0.0.0' ? '127.0.0.1' : bind === '::' ? '[::1]' : bind.includes(':') ? `[${bind}]` : bind;
  let token = config.hooks.token;
  if (!token && !config.file) {
    try {
      token = readFileSync(embeddedTokenFile(process.cwd()), 'utf8').trim();
    } catch {
      /* no token yet: the request will be answered 401 */
    }
  }
  return { url: `http://${host}:${config.gateway.port}${config.hooks.path}`, token };
}
