/**
 * The configured channels, by id: the core platforms whose config section is present, `irc`, the built-in extension
 * channels (`webhook` when configured, `log` always) and the plugins listed in `channels.plugins`.
 *
 * Platform modules are imported only when their section is present, so an unused platform costs nothing at start.
 * A core platform with `accounts` gets one instance per account besides the default one (the top-level section).
 *
 * Plugins are ESM modules inside the config file's directory (no `..`, no absolute path elsewhere, no symlink that
 * leads out), default-exporting — or exporting `channel` — either a Channel object or a factory
 * `(ctx) => Channel | Promise<Channel>`. Their ids may not clash with a core platform, a built-in channel, an alias,
 * `last`, or another plugin.
 */
import { normalizeChannelName } from '../config/lookup.js';
import { isInside } from '../config/paths.js';
import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_ACCOUNT_ID } from '../config/schema/accounts.js';
import {
  BUILTIN_EXTENSION_CHANNELS,
  CHANNEL_ALIASES,
  CORE_CHANNELS,
  type ChannelsConfig,
} from '../config/schema/channels.js';
import { createLogChannel } from './log.js';
import { ChannelError, type Channel, type ChannelContext } from './types.js';
import { recipientProblem, type RecipientCheck } from './recipients.js';
import { createWebhookChannel, webhookRecipientRule } from './webhook.js';

export interface ChannelRegistry {
  /**
   * The channel with this id or alias (case-insensitive), through `accountId` (a core platform's named account;
   * absent or `default`: the top-level section). Undefined when the channel, or that account of it, is not configured.
   */
  get(id: string, accountId?: string): Channel | undefined;
  /** The configured channel ids: core platforms in CORE_CHANNELS order, then webhook, log, plugins in config order. */
  ids(): string[];
  /**
   * Why `to` cannot be a recipient of channel `id` (its platform's rule and the shared one: recipients.ts), or
   * `undefined` when it can. An id that names no configured channel (`last`) gets the shared rule only.
   */
  checkRecipient(id: string, to: string): string | undefined;
  /** Lower-cased, trimmed, aliases resolved (`teams` → `msteams`). Does not check that the channel is configured. */
  normalize(name: string): string;
  /** Closes every channel and account (IRC sends QUIT, the log file is closed). Failures are logged, not thrown. */
  close(): Promise<void>;
}

/** `last` names a route, not a channel: a plugin may not take it. */
const RESERVED_IDS = new Set<string>([
  ...CORE_CHANNELS,
  ...BUILTIN_EXTENSION_CHANNELS,
  ...Object.keys(CHANNEL_ALIASES),
  'last',
]);
const PLUGIN_ID_RE = /^[a-z0-9][a-z0-9_-]*$/;

type CorePlatform = (typeof CORE_CHANNELS)[number];
type PlatformFactory = (config: unknown, ctx: ChannelContext) => Channel | Promise<Channel>;

/** Each platform's factory, its module loaded only when the platform is configured. */
const PLATFORM_FACTORIES: { [K in CorePlatform]: () => Promise<PlatformFactory> } = {
  whatsapp: async () => (await import('./whatsapp.js')).createWhatsAppChannel as PlatformFactory,
  telegram: async () => (await import('./telegram.js')).createTelegramChannel as PlatformFactory,
  discord: async () => (await import('./discord.js')).createDiscordChannel as PlatformFactory,
  googlechat: async () => (await import('./googlechat.js')).createGoogleChatChannel as PlatformFactory,
  slack: async () => (await import('./slack.js')).createSlackChannel as PlatformFactory,
  signal: async () => (await import('./signal.js')).createSignalChannel as PlatformFactory,
  imessage: async () => (await import('./imessage.js')).createIMessageChannel as PlatformFactory,
  msteams: async () => (await import('./msteams.js')).createMsTeamsChannel as PlatformFactory,
  // Like the others, loaded on first use: a process without IRC never holds its modules or its segmenter's ICU data.
  irc: async () => (await import('./irc.js')).createIrcChannel as PlatformFactory,
};

/** Each platform's recipient rule, loaded as its factory is: only for a configured platform. */
const PLATFORM_RECIPIENTS: { [K in CorePlatform]: () => Promise<(to: string) => string | undefined> } = {
  whatsapp: async () => (await import('./whatsapp.js')).checkWhatsAppRecipient,
  telegram: async () => (await import('./telegram.js')).checkTelegramRecipient,
  discord: async () => (await import('./discord.js')).checkDiscordRecipient,
  googlechat: async () => (await import('./googlechat.js')).checkGoogleChatRecipient,
  slack: async () => (await import('./slack.js')).checkSlackRecipient,
  signal: async () => (await import('./signal.js')).checkSignalRecipient,
  imessage: async () => (await import('./imessage.js')).checkIMessageRecipient,
  msteams: async () => (await import('./msteams.js')).checkTeamsRecipient,
  irc: async () => (await import('./irc.js')).checkIrcRecipient,
};

/**
 * The recipient check of a config's channels without starting them (no credential read, no socket): for the CLI,
 * which sets routes and renders mappings without the service. A plugin is not loaded here: it gets the shared rule.
 */
export async function loadRecipientCheck(config: ChannelsConfig): Promise<RecipientCheck> {
  const rules = new Map<string, (to: string) => string | undefined>();
  for (const name of CORE_CHANNELS) if (config[name]) rules.set(name, await PLATFORM_RECIPIENTS[name]());
  if (config.webhook) rules.set('webhook', webhookRecipientRule(config.webhook));
  return (id, to) => {
    const c = normalizeChannelName(id);
    const rule = rules.get(c);
    return recipientProblem(c, rule && { checkRecipient: rule }, to);
  };
}

/** One core platform's channel for one account's section (the doctor builds them one by one, to check each). */
export async function createPlatformChannel(
  name: CorePlatform,
  config: unknown,
  ctx: ChannelContext,
): Promise<Channel> {
  return (await PLATFORM_FACTORIES[name]())(config, ctx);
}

export { normalizeChannelName };

export async function createChannelRegistry(config: ChannelsConfig, ctx: ChannelContext): Promise<ChannelRegistry> {
  const channels = new Map<string, Channel>();
  /** The named accounts of core platforms, by `<channel>\0<account>`: one instance (own token, own socket) each. */
  const accounts = new Map<string, Channel>();
  const all = () => [...channels.values(), ...accounts.values()];
  try {
    for (const name of CORE_CHANNELS) {
      const section = config[name];
      if (!section) continue;
      channels.set(name, await createPlatformChannel(name, section, ctx));
      for (const [id, account] of Object.entries(section.accounts))
        accounts.set(accountKey(name, id), await createPlatformChannel(name, account, ctx));
    }
    if (config.webhook) channels.set('webhook', createWebhookChannel(config.webhook, ctx));
    channels.set('log', createLogChannel(config.log, ctx));
    for (const [index, entry] of config.plugins.entries()) {
      const channel = await loadChannelPlugin(entry, ctx, `channels.plugins[${index}]`);
      if (channels.has(channel.id))
        throw pluginError(`channels.plugins[${index}]`, entry, `id "${channel.id}" is already used by another plugin`);
      channels.set(channel.id, channel);
    }
  } catch (err) {
    await closeAll(all(), ctx);
    throw err;
  }

  return {
    get: (id, accountId) => {
      const c = normalizeChannelName(id);
      return accountId === undefined || accountId === DEFAULT_ACCOUNT_ID
        ? channels.get(c)
        : accounts.get(accountKey(c, accountId));
    },
    ids: () => [...channels.keys()],
    checkRecipient: (id, to) => {
      const c = normalizeChannelName(id);
      return recipientProblem(c, channels.get(c), to);
    },
    normalize: normalizeChannelName,
    close: () => closeAll(all(), ctx),
  };
}

const accountKey = (channel: string, accountId: string) => `${channel}\0${accountId}`;

async function closeAll(list: Channel[], ctx: ChannelContext): Promise<void> {
  const results = await Promise.allSettled(list.map((c) => c.close?.()));
  results.forEach((r, i) => {
    if (r.status === 'rejected')
      ctx.logger.warn(
        { channel: list[i]?.id, err: r.reason instanceof Error ? r.reason.message : String(r.reason) },
        'closing a channel failed',
      );
  });
}

function pluginError(where: string, entry: string, why: string, cause?: unknown): ChannelError {
  return new ChannelError(
    'channel_plugin_invalid',
    `${where} (${entry}): ${why}`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * Resolves `entry` against the config directory, refuses anything that ends up outside it (also through a symlink),
 * imports it and validates the channel it exports.
 */
export async function loadChannelPlugin(
  entry: string,
  ctx: ChannelContext,
  where = 'channels.plugins',
): Promise<Channel> {
  const root = await realpath(ctx.configDir).catch((err: unknown) => {
    throw pluginError(where, entry, `the config directory cannot be read (${codeOf(err)})`, err);
  });
  // Strictly below the config directory: the directory itself is no module.
  const inside = (p: string) => p !== root && isInside(root, p);
  const lexical = resolve(root, entry);
  if (!inside(lexical)) throw pluginError(where, entry, 'must be a module inside the config directory');
  const real = await realpath(lexical).catch((err: unknown) => {
    throw pluginError(
      where,
      entry,
      codeOf(err) === 'ENOENT' ? 'file not found' : `cannot be read (${codeOf(err)})`,
      err,
    );
  });
  if (!inside(real))
    throw pluginError(where, entry, 'resolves (through a symlink) to a file outside the config directory');
  const info = await stat(real);
  if (!info.isFile()) throw pluginError(where, entry, 'is not a file');

  let mod: Record<string, unknown>;
  try {
    // Node caches modules by URL: the modification time in the URL makes a config reload pick up an edited plugin,
    // while an unchanged one is not evaluated again.
    const url = `${pathToFileURL(real).href}?mtime=${Math.floor(info.mtimeMs)}`;
    mod = (await import(url)) as Record<string, unknown>;
  } catch (err) {
    throw pluginError(where, entry, `failed to load: ${err instanceof Error ? err.message : String(err)}`, err);
  }
  const exported = mod.default ?? mod.channel;
  if (exported === undefined) throw pluginError(where, entry, 'exports neither `default` nor `channel`');

  let channel: unknown = exported;
  if (typeof exported === 'function') {
    try {
      channel = await (exported as (ctx: ChannelContext) => unknown)(ctx);
    } catch (err) {
      throw pluginError(where, entry, `its factory failed: ${err instanceof Error ? err.message : String(err)}`, err);
    }
  }
  return validatePluginChannel(channel, where, entry);
}

function validatePluginChannel(value: unknown, where: string, entry: string): Channel {
  if (typeof value !== 'object' || value === null)
    throw pluginError(where, entry, 'must export a channel object or a factory returning one');
  const c = value as Partial<Record<keyof Channel, unknown>>;
  if (typeof c.id !== 'string' || !PLUGIN_ID_RE.test(c.id)) {
    throw pluginError(where, entry, '`id` must be a lower-case name (letters, digits, - and _)');
  }
  if (RESERVED_IDS.has(c.id)) throw pluginError(where, entry, `id "${c.id}" is reserved for a built-in channel`);
  if (typeof c.maxTextLength !== 'number' || !Number.isInteger(c.maxTextLength) || c.maxTextLength < 1) {
    throw pluginError(where, entry, '`maxTextLength` must be a positive integer');
  }
  if (typeof c.send !== 'function')
    throw pluginError(where, entry, '`send` must be a function (message, signal) => Promise<SendResult>');
  if (c.close !== undefined && typeof c.close !== 'function')
    throw pluginError(where, entry, '`close` must be a function when present');
  if (c.checkRecipient !== undefined && typeof c.checkRecipient !== 'function') {
    throw pluginError(where, entry, '`checkRecipient` must be a function (to) => string | undefined when present');
  }
  return value as Channel;
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'error';
}
