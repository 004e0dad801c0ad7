import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Observability } from './admin/observe.js';
import { type Config, configPath, loadConfigFile } from './config/load.js';
import { loadServeConfig } from './config/serve-config.js';
import { watchConfigFile } from './config/watch.js';
import { Generations } from './generation.js';
import { createHookRoutes } from './hooks/routes.js';
import { createHandler } from './ingress/handler.js';
import { IngressPressure } from './ingress/pressure.js';
import { type Listener, listen } from './ingress/server.js';
import { createLogger, type Logger } from './log.js';
import { errorMessage } from './text-safe.js';
import { AuthFailureLimiter } from './net/limiter.js';
import { killAgents } from './providers/command.js';
import type { NodeRegistration } from './runtime/node-registry.js';
import type { GmailService } from './gmail/watch.js';
import type { HookRoutes } from './hooks/routes.js';
import { type Runtime, startRuntime } from './runtime/runtime.js';
import { openStore } from './store/open.js';
import type { ReadStore, Store } from './store/types.js';
import { VERSION } from './version.js';
import type { AdminDeps } from './admin/routes.js';
import { Audit } from './audit.js';
import type { AdminListener } from './admin/server.js';

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
  /** The admin listener's URL (docs/admin.md); undefined when `admin.enabled` is false. */
  readonly adminUrl: string | undefined;
  /** For a look at the record; the app itself writes (ingress, runtime) and closes it. */
  readonly store: ReadStore;
  readonly logger: Logger;
  config(): Config;
  /** Re-read the config; an invalid file is logged and the old config stays. Resolves to whether it applied. */
  reload(): Promise<boolean>;
  /**
   * Stop (docs/operations.md, "Stopping"): claim nothing more at once, stop accepting, give requests in flight and
   * running turns `gateway.stopGraceSeconds`, then cut them off (runs go back to the queue), close the store.
   * `hint` is added to the "stopping" log line (the CLI's "Ctrl-C again to force" on a terminal).
   */
  close(opts?: { hint?: string }): Promise<void>;
  /** End a stop now, as if its grace period were over, and SIGKILL the agent children's process groups at once. */
  force(): void;
}

/** The service: store, one config generation at a time, runtime, hooks listener, admin listener, config watcher and pruner. */
export async function startApp(opts: AppOptions): Promise<App> {
  const env = opts.env ?? process.env;
  const { config: first, notice } = loadServeConfig(opts.configFile, opts.cwd ?? process.cwd(), env);
  if (notice) process.stderr.write(notice);
  const logger = opts.logger ?? createLogger(first.logging.level);
  for (const w of first.warnings) logger.warn({ config: first.file ?? 'embedded default' }, w);

  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const obs = await observability(first, logger, owner);
  // Tells the runtime (and the store's group commit) when the ingress is saturated, so that a burst's runs wait in
  // the store instead of taking the core.
  const pressure = new IngressPressure();
  const { store, generations, audit, runtime } = await startCore({ first, env, logger, owner, obs, pressure });
  // Kept across reloads (a reload changes its limits, never its counts): the ingress's and the lockout sync's.
  const limiter = new AuthFailureLimiter(first.hooks.authFailureLimit);
  generations.onSwap((next) => (limiter.setLimits(next.config.hooks.authFailureLimit), runtime.reconfigure()));
  const routes = createHookRoutes({ logger });
  const background = startBackground({ store, logger, owner, generations, signals: runtime.signals, routes, limiter });
  const signals = { ...runtime.signals, gmailPushed: background.gmail.notify };
  const core = { store, generations, audit, runtime, logger, obs };
  const { handler, listener, admin } = await startListeners(first, env, core, { signals, routes, pressure, limiter });
  // Before the listening line, not after it in the same tick: a test or script that edits the config as soon as it
  // reads the line runs in another process, and could write before the watch existed (seen once on a loaded machine).
  const stopWatching =
    opts.watchConfig && first.file ? watchConfigFile(first.file, () => void generations.reload()) : undefined;
  logListening(logger, first, listener, admin);
  background.listening(listener.url);
  const stopBackground = () => (stopWatching?.(), background.stop(), obs?.stop());
  const stop = stopper({
    listener,
    admin,
    runtime,
    generations,
    store,
    logger,
    registry: background.registry,
    stopBackground,
    flushIngress: handler.flushRefusals,
    gmail: background.gmail,
    audit,
  });
  return {
    url: listener.url,
    port: listener.port,
    adminUrl: admin?.url,
    store,
    logger,
    config: () => generations.current.config,
    reload: () => generations.reload(),
    ...stop,
  };
}

interface CoreDeps {
  first: Config;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  owner: string;
  obs: Observability | undefined;
  pressure: IngressPressure;
}

/** The durable core: the store (opened, migrated, stale leases recovered), the config generations, audit, runtime. */
async function startCore({ first, env, logger, owner, obs, pressure }: CoreDeps) {
  const store = await openStore(first.storage, (p) => configPath(first, p), {
    ...(obs ? { onCommit: obs.onCommit } : {}),
    ingressBusy: () => pressure.busy(),
    retryWhenFull: true, // a full disk at start: serve 503 and open the store once there is space (store/deferred.ts)
    adminReads: 'thread', // SQLite: the admin listener's reads never hold the hook listener's event loop
    schemaPolicy: 'migrate', // the service brings an older schema up to date (and, like every command, refuses a newer one)
    onSchema: (from, to) => void (from > 0 && from < to && logger.info({ from, to }, 'store schema migrated')),
    onWarning: (message) => logger.warn(message),
    onError: (message) => logger.error(message),
  });
  // The first write waits for the store's writer thread to start: the generation is built meanwhile.
  const [, generations] = await Promise.all([
    recoverLeases(store, logger),
    Generations.start(first, logger, (file) => loadConfigFile(file, { env })),
  ]);
  const audit = startAudit(generations, store, logger, owner);
  const feed = obs?.feed;
  const runtime = await startRuntime({
    store,
    logger,
    owner,
    env: () => generations.current,
    feed,
    ingressBusy: () => pressure.busy(),
  });
  return { store, generations, audit, runtime };
}

type Core = Awaited<ReturnType<typeof startCore>> & { logger: Logger; obs: Observability | undefined };

interface IngressDeps {
  signals: Runtime['signals'];
  routes: HookRoutes;
  pressure: IngressPressure;
  limiter: AuthFailureLimiter;
}

/** The hook listener (and its handler), then the admin listener when enabled; the metrics see both. */
async function startListeners(first: Config, env: NodeJS.ProcessEnv, core: Core, deps: IngressDeps) {
  const { store, generations, audit, runtime, logger, obs } = core;
  const { limiter } = deps;
  const handler = createHandler(() => generations.current, {
    store,
    completions: runtime.completions,
    logger,
    feed: obs?.feed,
    ...deps,
  });
  const connections = () => ({ hooks: listener.connectionCounts(), admin: admin?.connectionCounts() });
  obs?.attach({
    store,
    depths: () => store.queueDepths(),
    lockouts: () => limiter.lockedCount(Date.now()),
    connections,
  });
  // One record per lockout (the limiter tells once per lockout, never per failure); the actor is the address bucket.
  limiter.onLocked((bucket, until, why) => void audit.record('lockout', bucket, { ...why, until }));
  const listener = await listen(handler, { ...first.gateway, clientIps: generations.current.clientIps }, logger);
  generations.onSwap((next) => listener.setLimits(next.config.gateway.limits, next.clientIps));
  const admin =
    obs &&
    (await startAdminListener(first, env, generations, {
      store,
      signals: runtime.signals,
      logger,
      observability: obs,
      audit,
      ingressListening: () => listener.listening(),
      configLoaded: () => generations.current !== undefined,
    }));
  return { handler, listener, admin };
}

function logListening(logger: Logger, first: Config, listener: Listener, admin: AdminListener | undefined): void {
  const where = { url: listener.url, adminUrl: admin?.url, hooksPath: first.hooks.path };
  logger.info(
    { ...where, config: first.file ?? 'embedded default', store: first.storage.driver },
    'hookgate listening',
  );
}

/**
 * The live feed and the metrics, when something can read them: this process's admin listener, or (PostgreSQL) other
 * nodes' feeds through the cluster bridge. `admin.enabled` applies at the next start, so without either nothing is
 * built, prom-client is not loaded and the ingress announces nothing: otherwise every request would make garbage and
 * a metrics update nobody could scrape.
 */
async function observability(config: Config, logger: Logger, owner: string): Promise<Observability | undefined> {
  const shared = config.storage.driver === 'postgres';
  if (!config.admin.enabled && !shared) return undefined;
  const { createObservability } = await import('./admin/observe.js');
  return createObservability({ logger, replay: config.admin.enabled, ...(shared ? { node: owner } : {}) });
}

/** The admin listener and its notice, when `admin.enabled`: its modules (routes, dashboard, API) are loaded only then. */
async function startAdminListener(
  config: Config,
  env: NodeJS.ProcessEnv,
  generations: Generations,
  deps: AdminDeps,
): Promise<AdminListener | undefined> {
  if (!config.admin.enabled) return undefined;
  const { adminNotice, generationAccess, startAdmin } = await import('./admin/routes.js');
  const admin = await startAdmin(
    config.admin,
    generationAccess(() => generations.current),
    deps,
  );
  if (admin) process.stderr.write(adminNotice(admin.url, config.file, env));
  return admin;
}

interface BackgroundDeps {
  store: Store;
  logger: Logger;
  owner: string;
  generations: Generations;
  signals: Runtime['signals'];
  routes: HookRoutes;
  limiter: AuthFailureLimiter;
}

/**
 * What works beside the listeners, loaded (its modules) and started once they listen, not before the first request
 * can be taken: the Gmail fetcher and watch renewal, the pruner, the lockout sharing and this node's row in the node
 * registry. Until then a committed Gmail push waits in the store (the fetcher looks there when it starts); a stop
 * that comes first starts none of them.
 */
function startBackground(d: BackgroundDeps): {
  gmail: GmailService;
  registry: NodeRegistration;
  listening(url: string): void;
  stop(): void;
} {
  type Started = { gmail: GmailService; registry: NodeRegistration; stop(): void };
  const none: Started = {
    gmail: { notify: () => {}, stop: async () => {} },
    registry: { stop: async () => {} },
    stop: () => {},
  };
  let started: Promise<Started> | undefined;
  let stopped = false;
  const ready = () => started ?? Promise.resolve(none);
  const listening = (url: string) => {
    started = Promise.all([
      import('./gmail/watch.js'),
      import('./runtime/pruner.js'),
      import('./ingress/lockout-sync.js'),
      import('./runtime/node-registry.js'),
    ]).then(([{ startGmail }, { startPruner }, { shareLockouts }, { startNodeRegistry }]): Started => {
      if (stopped) return none;
      const { store, logger, owner, generations } = d;
      const gmail = startGmail({
        store,
        logger,
        owner,
        ctx: () => generations.current,
        signals: d.signals,
        routes: d.routes,
      });
      const stopPruning = startPruner(store, logger, {
        received: () => generations.current.config.hooks.receivedRetentionDays,
        audit: () => generations.current.config.logging.auditRetentionDays,
        runs: () => generations.current.config.hooks.runRetentionDays,
      });
      const stopSharingLockouts = shareLockouts(d.limiter, store, logger);
      const registry = startNodeRegistry({
        store,
        logger,
        node: { id: owner, host: hostname(), pid: process.pid, version: VERSION, url, startedAt: Date.now() },
      });
      return { gmail, registry, stop: () => (stopPruning(), stopSharingLockouts()) };
    });
    started.catch((err: unknown) =>
      d.logger.error({ err: errorMessage(err) }, 'the Gmail fetcher, pruner and node registry did not start'),
    );
  };
  return {
    gmail: {
      notify: (account) =>
        void started?.then(
          (b) => b.gmail.notify(account),
          () => {},
        ),
      stop: async () => (await ready()).gmail.stop(),
    },
    registry: { stop: async () => (await ready()).registry.stop() },
    listening,
    stop: () => {
      stopped = true;
      void started?.then(
        (b) => b.stop(),
        () => {},
      );
    },
  };
}

/** The audit trail of the service: every reload (applied or refused) is recorded; admin repairs and lockouts by their callers. */
function startAudit(generations: Generations, store: Store, logger: Logger, owner: string): Audit {
  const audit = new Audit({ logger, store, node: owner });
  let config = generations.current.config;
  generations.onSwap((next) => {
    audit.configReloaded(config, next.config, next.generation);
    config = next.config;
  });
  generations.onReject(
    (r) =>
      void audit.record('config.rejected', 'config', {
        reason: r.reason,
        paths: r.paths,
        generation: generations.current.generation,
      }),
  );
  return audit;
}

/**
 * A single-process store (SQLite): whatever was leased belonged to a process that is gone (a crash), so take it back
 * now. A shared store (PostgreSQL) never does: those leases may be other live nodes'; they lapse if their node died.
 */
async function recoverLeases(store: Store, logger: Logger): Promise<void> {
  if (store.shared) return;
  const recovered = await store.recoverLeases(Date.now());
  if (recovered)
    logger.warn(
      { runs: recovered },
      'recovered runs left running by a process that ended without giving them back (a crash or kill -9); they run again with the same ids',
    );
}

interface StopParts {
  listener: Listener;
  /** Closed first, with every connection (live feed streams too): operators reconnect to the next process. */
  admin: AdminListener | undefined;
  /** This node's row in the node registry: removed once the work is drained, before the store closes. */
  registry: NodeRegistration;
  runtime: Runtime;
  generations: Generations;
  store: Store;
  logger: Logger;
  stopBackground(): void;
  /** Store what the ingress holds in memory (the current window of refusal counts) once no request is left. */
  flushIngress(): void;
  /** The Gmail fetcher and watch renewal: stopped (a fetch in flight finishes) before the store closes. */
  gmail: GmailService;
  /** Audit records still queued are written before the store closes. */
  audit: Audit;
}

/** The stop of a started app: `close` (once, however often called) and `force`. */
function stopper({
  listener,
  admin,
  runtime,
  generations,
  store,
  logger,
  registry,
  stopBackground,
  flushIngress,
  gmail,
  audit,
}: StopParts): Pick<App, 'close' | 'force'> {
  const deadline = new AbortController();
  let closing: Promise<void> | undefined;
  const close = (opts: { hint?: string } = {}) =>
    (closing ??= (async () => {
      // First, before anything awaits: not one more run, delivery or heartbeat is claimed after the signal.
      runtime.stopClaiming();
      stopBackground();
      const adminClosed = admin?.close();
      const started = Date.now();
      const graceSeconds = generations.current.config.gateway.stopGraceSeconds;
      const { runs, heartbeats, deliveries } = runtime.load();
      const { connections, requests } = listener.load();
      const fields = { runs, heartbeats, deliveries, connections, requests, graceSeconds };
      logger.info(
        fields,
        `stopping: draining ${runs} runs, ${connections} connections${opts.hint ? ` (${opts.hint})` : ''}`,
      );
      const timer = setTimeout(() => {
        logger.warn(
          { graceSeconds },
          'stop grace period over: closing open connections, giving unfinished runs back to the queue',
        );
        deadline.abort();
      }, graceSeconds * 1000);
      runtime.releaseWaiters(); // held answers (waitForCompletion) would keep the listener from closing
      try {
        await Promise.all([listener.close(deadline.signal), runtime.drain(deadline.signal)]);
      } finally {
        clearTimeout(timer);
      }
      flushIngress();
      await adminClosed;
      await gmail.stop();
      await registry.stop();
      await generations.dispose();
      await audit.flush();
      await store.close();
      logger.info({ ms: Date.now() - started }, 'hookgate stopped');
      logger.flush();
    })());
  const force = () => {
    const stopping = close();
    void stopping.catch(() => {});
    if (!deadline.signal.aborted) {
      logger.warn(
        'forced stop: closing open connections, killing agent processes, giving unfinished runs back to the queue',
      );
      deadline.abort();
    }
    // After the abort (which records why each run ends), so a killed agent's run is given back, not failed.
    killAgents('SIGKILL');
  };
  return { close, force };
}
