import type { Config } from '../config/load.js';
import { ModelCatalog } from '../config/model-catalog.js';
import { configuredAccounts, configuredChannelIds, defaultAgentId } from '../config/lookup.js';

/**
 * What the request path needs from one config generation, computed once when the config (re)loads,
 * never per request.
 */
export interface HooksContext {
  readonly config: Config;
  readonly generation: number;
  readonly basePath: string;
  readonly catalog: ModelCatalog;
  /** Channel ids a request may name (besides `last`): configured platforms, builtin extensions, plugins. */
  readonly channelIds: ReadonlySet<string>;
  /** The accounts a request's `accountId` may name, per core platform (`default` first); other channels have none. */
  readonly channelAccounts: ReadonlyMap<string, readonly string[]>;
  readonly defaultAgentId: string;
}

/** `registeredChannelIds`: what the channel registry serves (plugins included), added to what the config names. */
export function buildHooksContext(config: Config, generation: number, registeredChannelIds: readonly string[] = []): HooksContext {
  return {
    config,
    generation,
    basePath: config.hooks.path,
    catalog: new ModelCatalog(config),
    channelIds: new Set([...configuredChannelIds(config), ...registeredChannelIds]),
    channelAccounts: configuredAccounts(config),
    defaultAgentId: defaultAgentId(config),
  };
}
