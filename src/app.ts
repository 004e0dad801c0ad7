import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type Config, configPath, loadConfigFile } from './config/load.js';
import { loadServeConfig } from './config/serve-config.js';
import { watchConfigFile } from './config/watch.js';
import { Generations } from './generation.js';
import { createHookRoutes } from './hooks/routes.js';
import { createHandler, IngressState } from './ingress/handler.js';
import { listen } from './ingress/server.js';
import { createLogger, type Logger } from './log.js';
import { startPruner } from './runtime/pruner.js';
import { startRuntime } from './runtime/runtime.js';
import { openStore } from './store/open.js';
import type { ReadStore } from './store/types.js';

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
  /** For a look at the record; the app itself writes (ingress, runtime) and closes it. */
  readonly store: ReadStore;
  readonly logger: Logger;
  config(): Config;
  /** Re-read the config; an invalid file is logged and the old config stays. Resolves to whether it applied. */
  reload(): Promise<boolean>;
  close(): Promise<void>;
}

/** The service: store, one config generation at a time, runtime, hooks listener, config watcher and pruner. */
export async function startApp(opts: AppOptions): Promise<App> {
  const env = opts.env ?? process.env;
  const { config: first, notice } = loadServeConfig(opts.configFile, opts.cwd ?? process.cwd(), env);
  if (notice) process.stderr.write(notice);
  const logger = opts.logger ?? createLogger(first.logging.level);
  for (const w of first.warnings) logger.warn({ config: first.file ?? 'embedded default' }, w);
  if (first.admin.enabled) logger.warn('admin.enabled: the admin listener is not part of this version yet; nothing listens on admin.port');

  const store = await openStore(first.storage, (p) => configPath(first, p), { onWarning: (message) => logger.warn(message) });
  // Single-writer store: whatever was leased belonged to a process that is gone (a crash): take it back now.
  const recovered = first.storage.driver === 'sqlite' ? await store.recoverLeases(Date.now()) : 0;
  if (recovered) logger.warn({ runs: recovered }, 'recovered runs interrupted by the last stop; they run again with the same ids');

  const generations = await Generations.start(first, logger, (file) => loadConfigFile(file, { env }));
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const runtime = await startRuntime({ store, logger, owner, env: () => generations.current });
  const state = new IngressState(generations.current);
  const routes = createHookRoutes({ logger });
  routes.prepare(state.ctx);
  generations.onSwap((next) => {
    state.update(next);
    routes.prepare(next);
    runtime.reconfigure();
  });
  const listener = await listen(createHandler(state, { store, signals: runtime.signals, completions: runtime.completions, logger, routes }), first.gateway);
  logger.info({ url: listener.url, hooksPath: first.hooks.path, config: first.file ?? 'embedded default', store: first.storage.driver }, 'hookgate listening');
  const stopWatching = opts.watchConfig && first.file ? watchConfigFile(first.file, () => void generations.reload()) : undefined;
  const stopPruning = startPruner(store, logger, () => generations.current.config.hooks.receivedRetentionDays);

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      stopWatching?.();
      stopPruning();
      runtime.releaseWaiters(); // held answers would keep the listener from closing
      await listener.close();
      await runtime.close();
      await generations.dispose();
      await store.close();
      logger.info('hookgate stopped');
      logger.flush();
    })());
  return { url: listener.url, port: listener.port, store, logger, config: () => generations.current.config, reload: () => generations.reload(), close };
}
