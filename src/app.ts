import { randomUUID } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import { embeddedDefault } from './config/defaults.js';
import { type Config, configPath, loadConfigFile, validateConfig } from './config/load.js';
import { ConfigError } from './errors.js';
import { type ChannelRegistry, createChannelRegistry } from './channels/registry.js';
import { buildHooksContext, type HooksContext } from './hooks/context.js';
import { createMappedRoutes } from './hooks/mappings.js';
import { createHandler, IngressState } from './ingress/handler.js';
import { createLogger, type Logger } from './log.js';
import { closeProviders, createProviders } from './providers/registry.js';
import type { ModelProvider } from './providers/types.js';
import type { RuntimeEnv } from './runtime/env.js';
import { startRuntime } from './runtime/runtime.js';
import { openStore } from './store/open.js';
import type { Store } from './store/types.js';

export interface AppOptions {
  /** The config file; undefined → the embedded default. */
  configFile: string | undefined;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** Watch the config file and reload on change (SIGHUP is wired by the CLI). */
  watchConfig?: boolean;
}

export interface App {
  readonly url: string;
  readonly port: number;
  readonly store: Store;
  readonly logger: Logger;
  config(): Config;
  /** Re-read the config; an invalid file is logged and the old config stays. Resolves to whether it applied. */
  reload(): Promise<boolean>;
  close(): Promise<void>;
}

/** Load the config the way `serve` does: the file, or the embedded default (creating its token once). */
export function loadServeConfig(configFile: string | undefined, cwd: string, env: NodeJS.ProcessEnv): { config: Config; notice?: string } {
  if (configFile) return { config: loadConfigFile(configFile, { env }) };
  const def = embeddedDefault(cwd, env);
  const config = validateConfig(def.config, undefined, cwd, { env });
  const notice = def.generatedTokenFile
    ? `hookgate: no config file, using the embedded default. Hook token (kept in ${def.generatedTokenFile}):\n  ${def.token}\n`
    : undefined;
  return { config, notice };
}

export async function startApp(opts: AppOptions): Promise<App> {
  const cwd = opts.cwd ?? process.cwd();
  const env = opts.env ?? process.env;
  const { config: first, notice } = loadServeConfig(opts.configFile, cwd, env);
  if (notice) process.stderr.write(notice);
  const logger = opts.logger ?? createLogger(first.logging.level);
  for (const w of first.warnings) logger.warn({ config: first.file ?? 'embedded default' }, w);
  if (first.admin.enabled) logger.warn('admin.enabled: the admin listener is not part of this version yet; nothing listens on admin.port');

  const storage = first.storage;
  const store = await openStore(storage, (p) => configPath(first, p), { onWarning: (message) => logger.warn(message) });

  // Single-writer store: whatever was leased belonged to a process that is gone (a crash): take it back now.
  if (storage.driver === 'sqlite') {
    const recovered = await store.recoverLeases(Date.now());
    if (recovered) logger.warn({ runs: recovered }, 'recovered runs interrupted by the last stop; they run again with the same ids');
  }

  let generation = 1;
  let current = first;
  const channelCtx = (c: Config) => ({ configDir: c.dir, logger });
  let channels: ChannelRegistry = await createChannelRegistry(first.channels, channelCtx(first));
  let providers: Map<string, ModelProvider> = createProviders(first.models.providers);
  const state = new IngressState(buildHooksContext(first, generation, channels.ids()));
  const envOf = (config: Config, ctx: HooksContext): RuntimeEnv => ({
    config,
    catalog: ctx.catalog,
    providers,
    channels,
    defaultAgentId: ctx.defaultAgentId,
  });
  let runtimeEnv = envOf(first, state.ctx);
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const runtime = await startRuntime({ store, logger, owner, env: () => runtimeEnv });
  const signals = runtime.signals;
  const mapped = createMappedRoutes({ logger });
  mapped.prepare?.(state.ctx);
  const handler = createHandler(state, { store, signals, logger, mapped });
  const server: Server = createServer({ keepAliveTimeout: 5000 }, (req, res) => void handler(req, res));
  server.on('clientError', (err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(first.gateway.port, first.gateway.bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;
  logger.info({ url, hooksPath: first.hooks.path, config: first.file ?? 'embedded default', store: storage.driver }, 'hookgate listening');

  const reload = async (): Promise<boolean> => {
    if (!current.file) return false;
    let next: Config;
    try {
      next = loadConfigFile(current.file, { env });
    } catch (err) {
      const issues = err instanceof ConfigError ? err.issues : [{ path: '', message: (err as Error).message }];
      logger.error({ config: current.file, issues }, 'config reload rejected; the previous config stays active');
      return false;
    }
    const restartOnly: string[] = [];
    if (JSON.stringify(next.storage) !== JSON.stringify(current.storage)) restartOnly.push('storage');
    if (next.gateway.bind !== current.gateway.bind || next.gateway.port !== current.gateway.port) restartOnly.push('gateway.bind/port');
    if (restartOnly.length) logger.warn({ keys: restartOnly }, 'config keys changed that apply only after a restart');
    let nextChannels: ChannelRegistry;
    try {
      nextChannels = await createChannelRegistry(next.channels, channelCtx(next));
    } catch (err) {
      logger.error({ config: next.file, err: (err as Error).message }, 'config reload rejected: channels failed to start; the previous config stays active');
      return false;
    }
    const oldChannels = channels;
    const oldProviders = providers;
    channels = nextChannels;
    providers = createProviders(next.models.providers);
    current = next;
    generation += 1;
    state.update(buildHooksContext(next, generation, channels.ids()));
    mapped.prepare?.(state.ctx);
    runtimeEnv = envOf(next, state.ctx);
    runtime.reconfigure();
    // In-flight sends on the old channels may fail and are retried by the outbox on the new ones.
    void oldChannels.close().catch(() => {});
    void closeProviders(oldProviders).catch(() => {});
    if (next.logging.level !== logger.level) logger.level = next.logging.level;
    for (const w of next.warnings) logger.warn({ config: next.file }, w);
    logger.info({ config: next.file, generation }, 'config reloaded');
    return true;
  };

  let watcher: FSWatcher | undefined;
  if (opts.watchConfig && first.file) {
    let timer: NodeJS.Timeout | undefined;
    // Editors replace files (rename) or write twice: debounce, and watch the directory so a replaced file is seen.
    const file = first.file;
    const name = file.slice(file.lastIndexOf('/') + 1);
    watcher = watch(file.slice(0, file.lastIndexOf('/')) || '/', (_event, changed) => {
      if (changed && changed !== name) return;
      clearTimeout(timer);
      timer = setTimeout(() => void reload(), 150);
    });
    watcher.unref();
  }

  const pruneEvery = 10 * 60_000;
  const prune = () => {
    const now = Date.now();
    store
      .prune(now, now - current.hooks.receivedRetentionDays * 86_400_000)
      .then((n) => (n.idempotency || n.received ? logger.debug(n, 'pruned expired records') : undefined))
      .catch((err) => logger.warn({ err: (err as Error).message }, 'prune failed'));
  };
  prune();
  const pruneTimer = setInterval(prune, pruneEvery);
  pruneTimer.unref();

  let closing: Promise<void> | undefined;
  return {
    url,
    port: addr.port,
    store,
    logger,
    config: () => current,
    reload,
    close() {
      closing ??= (async () => {
        watcher?.close();
        clearInterval(pruneTimer);
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await runtime.close();
        await channels.close();
        await closeProviders(providers);
        await store.close();
        logger.info('hookgate stopped');
        logger.flush();
      })();
      return closing;
    },
  };
}
