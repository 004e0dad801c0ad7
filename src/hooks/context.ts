import type { Config } from '../config/load.js';
import { ModelCatalog } from '../config/model-catalog.js';
import { configuredAccounts, configuredChannelIds, defaultAgentId } from '../config/lookup.js';
import { type RecipientCheck, recipientProblem } from '../channels/recipients.js';
import { CompiledRoutes } from './routes.js';

/**
 * What the request path needs from one config generation, computed once when the config (re)loads,
 * never per request. A request reads it once, at its start, and keeps it to its end.
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
  /** Why a request's `to` cannot be a recipient of its channel (the channel's own rule), or `undefined`. */
  readonly checkRecipient: RecipientCheck;
  /** The routes' plans and compiled mappings (routes.ts); `routes.dispose()` releases them with the generation. */
  readonly routes: CompiledRoutes;
}

/** For a context built without channels: the rule every channel shares, no platform's own. */
const sharedRecipientRule: RecipientCheck = (channel, to) => recipientProblem(channel, undefined, to);

/**
 * `registeredChannelIds`: what the channel registry serves (plugins included), added to what the config names;
 * `checkRecipient`: the registry's (the service) or `loadRecipientCheck`'s (the CLI).
 */
export function buildHooksContext(
  config: Config,
  generation: number,
  registeredChannelIds: readonly string[] = [],
  checkRecipient: RecipientCheck = sharedRecipientRule,
): HooksContext {
  return {
    config,
    generation,
    basePath: config.hooks.path,
    catalog: new ModelCatalog(config),
    channelIds: new Set([...configuredChannelIds(config), ...registeredChannelIds]),
    channelAccounts: configuredAccounts(config),
    defaultAgentId: defaultAgentId(config),
    checkRecipient,
    routes: new CompiledRoutes(config),
  };
}
