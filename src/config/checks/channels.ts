import type { ConfigIssue } from '../../errors.js';
import { accountProblem, configuredAccounts, configuredChannelIds, normalizeChannelName } from '../lookup.js';
import { CORE_CHANNELS } from '../schema/channels.js';
import type { RawConfig } from '../schema/index.js';
import { isTemplated } from '../template-syntax.js';
import type { ConfigFindings } from './types.js';

/** Checks that a static channel name is `last` or configured (plugins are checked when they load). */
export type ChannelNameCheck = (name: string | undefined, path: string) => void;

export function channelNameCheck(config: RawConfig, issues: ConfigIssue[]): ChannelNameCheck {
  const known = configuredChannelIds(config);
  const mayBePlugin = config.channels.plugins.length > 0;
  return (name, path) => {
    if (name === undefined || isTemplated(name)) return;
    const c = normalizeChannelName(name);
    if (c === 'last' || known.includes(c)) return;
    if (mayBePlugin && !(CORE_CHANNELS as readonly string[]).includes(c)) return;
    issues.push({
      path,
      message: `channel "${name}" is not configured (configured: ${['last', ...known].join(', ')})`,
    });
  };
}

/** Checks a static `accountId` against a static channel (`last` when unset); templated values are checked per request. */
export function accountCheck(
  config: RawConfig,
  issues: ConfigIssue[],
): (channel: string | undefined, accountId: string | undefined, path: string) => void {
  const accounts = configuredAccounts(config);
  return (channel, accountId, path) => {
    if (accountId === undefined || isTemplated(accountId) || (channel !== undefined && isTemplated(channel))) return;
    const problem = accountProblem(accounts, normalizeChannelName(channel ?? 'last'), accountId.toLowerCase());
    if (problem) issues.push({ path, message: problem });
  };
}

/** `channels.default` names a concrete, configured channel; without one, replies to `last` may have nowhere to go (a warning). */
export function checkChannels(config: RawConfig): ConfigFindings {
  const issues: ConfigIssue[] = [];
  const fallback = config.channels.default;
  if (fallback) {
    if (normalizeChannelName(fallback.channel) === 'last')
      issues.push({
        path: 'channels.default.channel',
        message: 'channels.default must name a concrete channel, not "last"',
      });
    else channelNameCheck(config, issues)(fallback.channel, 'channels.default.channel');
  }
  const warnings: string[] = [];
  if (!fallback && config.hooks.enabled) {
    warnings.push(
      'channels.default is not set: replies for `last` (the default channel of agent runs) and heartbeat replies go nowhere unless the operator sets a route for the main session (hookgate sessions route main); set channels.default, e.g. { channel: "log" }',
    );
  }
  return { issues, warnings };
}
