/**
 * One config generation: everything built from one loaded config, as one immutable value, built in one place
 * (`buildGeneration`) and swapped as one reference. Its views: `HooksContext` (the request path: config, base path,
 * model catalog, channel ids, default agent, compiled routes), `IngressContext` (plus the hook tokens, the client
 * address resolver, the route limits), `RuntimeEnv` (channels, providers) and the admin listener's `AdminView` (its
 * tokens, the same hook tokens, its client policy). What outlives a reload is not in it: the auth-failure limiters'
 * counts and lockouts, the route buckets (handed from one generation's limits to the next), the connection guard, the
 * refusal counts.
 */
import { type ChannelRegistry, createChannelRegistry } from './channels/registry.js';
import type { Config } from './config/load.js';
import { ConfigError } from './errors.js';
import type { ModelCatalog } from './config/model-catalog.js';
import { buildHooksContext } from './hooks/context.js';
import { tokenSetOf, type TokenSet } from './ingress/auth.js';
import { buildIngressContext, type IngressContext } from './ingress/context.js';
import type { Logger } from './log.js';
import type { ClientIpResolver } from './net/client-ip.js';
import type { AuthFailureLimits } from './net/limiter.js';
import { closeProviders, createProviders } from './providers/registry.js';
import type { ModelProvider } from './providers/types.js';
import type { RuntimeEnv } from './runtime/env.js';

export interface Generation extends IngressContext, RuntimeEnv {
  readonly config: Config;
  readonly catalog: ModelCatalog;
  readonly defaultAgentId: string;
  readonly providers: Map<string, ModelProvider>;
  readonly channels: ChannelRegistry;
  /** `admin.token` and `admin.tokens`. */
  readonly adminTokens: TokenSet;
  /** Who the admin listener trusts as a proxy and how it throttles wrong tokens (admin/auth-gate.ts). */
  readonly adminClients: { readonly clientIps: ClientIpResolver; readonly authFailureLimit: AuthFailureLimits };
  /** Close what this generation opened (channel sockets, provider children, the transform loader). In-flight sends may fail: the outbox retries them. */
  dispose(): Promise<void>;
}

/**
 * Builds generation `number` of `config`; `previous` (a reload) hands its route buckets on. Channels start here (IRC
 * connects): a failure rejects and nothing is left open.
 */
export async function buildGeneration(
  config: Config,
  number: number,
  logger: Logger,
  previous?: Generation,
): Promise<Generation> {
  const channels = await createChannelRegistry(config.channels, { configDir: config.dir, logger });
  const providers = createProviders(config.models.providers);
  const hooks = buildHooksContext(config, number, channels.ids(), channels.checkRecipient);
  const ingress = buildIngressContext(hooks, previous?.routeLimits ?? null);
  return {
    ...ingress,
    providers,
    channels,
    adminTokens: tokenSetOf(config.admin),
    adminClients: { clientIps: ingress.clientIps, authFailureLimit: config.hooks.authFailureLimit },
    async dispose() {
      await Promise.allSettled([channels.close(), closeProviders(providers), hooks.routes.dispose()]);
    },
  };
}

/** Config keys that a reload cannot change in a running process: named in a warning, applied at the next start. */
export function restartOnlyChanges(current: Config, next: Config): string[] {
  const keys: string[] = [];
  if (JSON.stringify(next.storage) !== JSON.stringify(current.storage)) keys.push('storage');
  if (next.gateway.bind !== current.gateway.bind || next.gateway.port !== current.gateway.port)
    keys.push('gateway.bind/port');
  // The admin listener is started once; it reads its tokens from the current generation, so new ones apply at once.
  const a = current.admin;
  const b = next.admin;
  if (a.enabled !== b.enabled || a.bind !== b.bind || a.port !== b.port) keys.push('admin.enabled/bind/port');
  return keys;
}

/** A refused reload: why (an invalid file, channels that failed to start) and the key paths at fault (never values). */
export interface RejectedReload {
  reason: 'invalid' | 'channels';
  paths: string[];
}

/**
 * The current generation and how it is replaced. `reload()` re-reads the config file: an invalid file, or channels
 * that fail to start, are logged by key path and the current generation stays; else the next one is swapped in, the
 * listeners are told, and the old one is disposed.
 */
export class Generations {
  private gen: Generation;
  private readonly listeners: Array<(next: Generation) => void> = [];
  private readonly rejectListeners: Array<(rejected: RejectedReload) => void> = [];

  private constructor(
    first: Generation,
    private readonly logger: Logger,
    private readonly load: (file: string) => Config,
  ) {
    this.gen = first;
  }

  static async start(config: Config, logger: Logger, load: (file: string) => Config): Promise<Generations> {
    return new Generations(await buildGeneration(config, 1, logger), logger, load);
  }

  get current(): Generation {
    return this.gen;
  }

  onSwap(listener: (next: Generation) => void): void {
    this.listeners.push(listener);
  }

  /** Told when a reload is refused and the current generation stays (the audit trail records it). */
  onReject(listener: (rejected: RejectedReload) => void): void {
    this.rejectListeners.push(listener);
  }

  private rejected(r: RejectedReload): void {
    for (const l of this.rejectListeners) l(r);
  }

  /** Resolves to whether the new config applied. */
  async reload(): Promise<boolean> {
    const current = this.gen.config;
    if (!current.file) return false;
    const { logger } = this;
    let next: Config;
    try {
      next = this.load(current.file);
    } catch (err) {
      const issues = err instanceof ConfigError ? err.issues : [{ path: '', message: (err as Error).message }];
      logger.error({ config: current.file, issues }, 'config reload rejected; the previous config stays active');
      this.rejected({ reason: 'invalid', paths: issues.map((i) => i.path) });
      return false;
    }
    const restartOnly = restartOnlyChanges(current, next);
    if (restartOnly.length) logger.warn({ keys: restartOnly }, 'config keys changed that apply only after a restart');
    let built: Generation;
    try {
      built = await buildGeneration(next, this.gen.generation + 1, logger, this.gen);
    } catch (err) {
      logger.error(
        { config: next.file, err: (err as Error).message },
        'config reload rejected: channels failed to start; the previous config stays active',
      );
      this.rejected({ reason: 'channels', paths: ['channels'] });
      return false;
    }
    const old = this.gen;
    this.gen = built;
    for (const l of this.listeners) l(built);
    void old.dispose();
    if (next.logging.level !== logger.level) logger.level = next.logging.level;
    for (const w of next.warnings) logger.warn({ config: next.file }, w);
    logger.info({ config: next.file, generation: built.generation }, 'config reloaded');
    return true;
  }

  dispose(): Promise<void> {
    return this.gen.dispose();
  }
}
