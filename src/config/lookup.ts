/**
 * Lookups over a loaded config: the rules every layer reads the same way (which channels exist, which agent is the
 * default, whether a session key or agent is allowed). Pure; config is the bottom floor, so hooks, runtime, channels
 * and the CLI all import these from here.
 */
import { DEFAULT_ACCOUNT_ID } from './schema/accounts.js';
import { BUILTIN_EXTENSION_CHANNELS, CHANNEL_ALIASES, CORE_CHANNELS } from './schema/channels.js';
import type { RawConfig } from './schema/index.js';
import { logSafe } from '../text-safe.js';

/** Session-key prefixes compare case-insensitively (keys are lowercased when they are stored). */
export function startsWithAny(key: string, prefixes: readonly string[]): boolean {
  const k = key.toLowerCase();
  return prefixes.some((p) => k.startsWith(p));
}

export function normalizeChannelName(name: string): string {
  const c = name.trim().toLowerCase();
  return CHANNEL_ALIASES[c] ?? c;
}

/** Channels usable without plugins: core platforms with a config section, `webhook` with targets, `log` always. */
export function configuredChannelIds(config: Pick<RawConfig, 'channels'>): string[] {
  const ch = config.channels as Record<string, unknown>;
  const out: string[] = CORE_CHANNELS.filter((c) => ch[c] !== undefined);
  for (const c of BUILTIN_EXTENSION_CHANNELS) if (c === 'log' || ch[c] !== undefined) out.push(c);
  return out;
}

/**
 * The accounts of each configured core platform: `default` (the top-level section) first, then the named ones in
 * config order. Extension channels and plugins have no accounts and are not in the map.
 */
export function configuredAccounts(config: Pick<RawConfig, 'channels'>): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const c of CORE_CHANNELS) {
    const section = config.channels[c];
    if (section) out.set(c, [DEFAULT_ACCOUNT_ID, ...Object.keys(section.accounts)]);
  }
  return out;
}

/**
 * Why `accountId` (lower-cased) cannot be used with `channel` (normalised), or undefined when it can: it needs an
 * explicit channel, one with accounts, and one of that channel's accounts. The message says what to change.
 */
export function accountProblem(
  accounts: ReadonlyMap<string, readonly string[]>,
  channel: string,
  accountId: string,
): string | undefined {
  if (channel === 'last')
    return 'accountId needs an explicit channel (channel is "last"); name the channel the account belongs to, e.g. "channel": "telegram"';
  const known = accounts.get(channel);
  if (!known) return `channel "${channel}" has no accounts; remove accountId`;
  if (!known.includes(accountId))
    return `accountId "${logSafe(accountId, 64)}" is not an account of channel "${channel}"; use one of: ${known.join(', ')}`;
  return undefined;
}

/** The default agent: the one marked default, else the first. */
export function defaultAgentId(config: Pick<RawConfig, 'agents'>): string {
  return (config.agents.list.find((a) => a.default) ?? config.agents.list[0]!).id;
}

/** Unknown ids fall back to the default agent; the allowlist is checked against the agent actually used. */
export function resolveAgentId(requested: string | undefined, config: Pick<RawConfig, 'agents'>): string {
  if (requested !== undefined) {
    const id = requested.trim().toLowerCase();
    if (config.agents.list.some((a) => a.id === id)) return id;
  }
  return defaultAgentId(config);
}

export function agentAllowed(requested: string | undefined, config: Pick<RawConfig, 'agents' | 'hooks'>): boolean {
  const allow = config.hooks.allowedAgentIds;
  if (allow === undefined || allow.includes('*')) return true;
  const id = resolveAgentId(requested, config);
  return allow.map((a) => a.toLowerCase()).includes(id);
}
