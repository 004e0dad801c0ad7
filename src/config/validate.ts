import type { ConfigIssue } from '../errors.js';
import { ModelCatalog } from './model-catalog.js';
import { BUILTIN_EXTENSION_CHANNELS, CHANNEL_ALIASES, CORE_CHANNELS } from './schema/channels.js';
import { isTemplated } from './template-syntax.js';
import type { RawConfig } from './schema/index.js';

/**
 * Rules that span keys (the schema checks each key alone). Pure: no file system.
 * Returns problems (the config must not start) and warnings (it may).
 */
export function crossCheck(config: RawConfig): { issues: ConfigIssue[]; warnings: string[] } {
  const issues: ConfigIssue[] = [];
  const warnings: string[] = [];
  const { hooks, agents, admin } = config;

  if (hooks.enabled && !hooks.token) issues.push({ path: 'hooks.token', message: 'hooks.enabled requires hooks.token' });
  if (hooks.path === '/') issues.push({ path: 'hooks.path', message: "hooks.path may not be '/'" });
  if (hooks.token && hooks.token.length < 16)
    warnings.push('hooks.token is shorter than 16 characters: use `hookgate token` for a strong one');

  const prefixes = hooks.allowedSessionKeyPrefixes;
  const hasPrefixes = prefixes !== undefined && prefixes.length > 0;
  if (hasPrefixes && hooks.defaultSessionKey && !startsWithAny(hooks.defaultSessionKey, prefixes)) {
    issues.push({ path: 'hooks.defaultSessionKey', message: 'hooks.defaultSessionKey must match hooks.allowedSessionKeyPrefixes' });
  }
  if (hasPrefixes && !hooks.defaultSessionKey && !startsWithAny('hook:example', prefixes)) {
    issues.push({
      path: 'hooks.allowedSessionKeyPrefixes',
      message: "hooks.allowedSessionKeyPrefixes must include 'hook:' when hooks.defaultSessionKey is unset",
    });
  }

  // Agents: unique ids, at most one default.
  const ids = new Set<string>();
  agents.list.forEach((a, i) => {
    if (ids.has(a.id)) issues.push({ path: `agents.list[${i}].id`, message: `duplicate agent id "${a.id}"` });
    ids.add(a.id);
  });
  if (agents.list.filter((a) => a.default).length > 1)
    issues.push({ path: 'agents.list', message: 'at most one agent may be marked default: true' });

  // Models: every configured ref must resolve; the defaults must also be allowed.
  const catalog = new ModelCatalog(config);
  const checkModel = (ref: string | undefined, path: string, mustBeAllowed: boolean) => {
    if (ref === undefined || isTemplated(ref)) return;
    const r = mustBeAllowed ? catalog.resolveAllowed(ref) : catalog.resolve(ref);
    if (!r.ok) issues.push({ path, message: r.reason });
  };
  checkModel(agents.defaults.model, 'agents.defaults.model', true);
  agents.list.forEach((a, i) => checkModel(a.model, `agents.list[${i}].model`, true));
  checkModel(hooks.gmail.model, 'hooks.gmail.model', true);
  const allow = agents.defaults.models;
  if (allow) {
    const refs = Array.isArray(allow) ? allow : Object.keys(allow);
    refs.forEach((ref) => {
      const r = catalog.resolve(ref);
      if (!r.ok) issues.push({ path: `agents.defaults.models`, message: r.reason });
    });
  }

  // Channels named in config must be configured (plugins are checked when they load).
  const known = configuredChannelIds(config);
  const mayBePlugin = config.channels.plugins.length > 0;
  const checkChannel = (name: string | undefined, path: string) => {
    if (name === undefined || isTemplated(name)) return;
    const c = normalizeChannelName(name);
    if (c === 'last' || known.includes(c)) return;
    if (mayBePlugin && !(CORE_CHANNELS as readonly string[]).includes(c)) return;
    issues.push({ path, message: `channel "${name}" is not configured (configured: ${['last', ...known].join(', ')})` });
  };
  if (config.channels.default) {
    if (normalizeChannelName(config.channels.default.channel) === 'last')
      issues.push({ path: 'channels.default.channel', message: 'channels.default must name a concrete channel, not "last"' });
    else checkChannel(config.channels.default.channel, 'channels.default.channel');
  }

  hooks.mappings.forEach((m, i) => {
    const at = `hooks.mappings[${i}]`;
    if (m.sessionKey && isTemplated(m.sessionKey) && !hasPrefixes) {
      issues.push({
        path: `${at}.sessionKey`,
        message: 'hooks.allowedSessionKeyPrefixes is required when a hook mapping sessionKey uses templates',
      });
    }
    if (m.sessionKey && !isTemplated(m.sessionKey) && hasPrefixes && !startsWithAny(m.sessionKey, prefixes)) {
      issues.push({ path: `${at}.sessionKey`, message: `sessionKey must start with one of: ${prefixes.join(', ')}` });
    }
    if (m.action === 'wake' && !m.textTemplate && !m.transform)
      issues.push({ path: `${at}.textTemplate`, message: 'a wake mapping needs textTemplate or a transform' });
    if (m.action === 'agent' && !m.messageTemplate && !m.transform)
      issues.push({ path: `${at}.messageTemplate`, message: 'an agent mapping needs messageTemplate or a transform' });
    checkModel(m.model, `${at}.model`, true);
    checkChannel(m.channel, `${at}.channel`);
    if (m.agentId && hooks.allowedAgentIds && !agentAllowed(m.agentId, config))
      issues.push({ path: `${at}.agentId`, message: `agent "${m.agentId}" is not allowed by hooks.allowedAgentIds` });
  });
  issues.push(...mappingIssues(hooks));
  warnings.push(...mappingWarnings(hooks));

  if (admin.enabled && !admin.token) issues.push({ path: 'admin.token', message: 'admin.enabled requires admin.token' });
  if (hooks.token && admin.token && hooks.token === admin.token)
    warnings.push('hooks.token equals admin.token: use a dedicated hook token (`hookgate token`)');
  if (!hooks.enabled) warnings.push('hooks.enabled is not true: every request under hooks.path answers 404');
  return { issues, warnings };
}

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

/** Mapping rules beyond single keys: unique ids. */
function mappingIssues(hooks: RawConfig['hooks']): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  hooks.mappings.forEach((m, i) => {
    if (m.id === undefined) return;
    const first = seen.get(m.id);
    if (first !== undefined)
      issues.push({ path: `hooks.mappings[${i}].id`, message: `duplicate mapping id "${m.id}" (also hooks.mappings[${first}].id)` });
    else seen.set(m.id, i);
  });
  return issues;
}

/**
 * Mappings that can never work as written: they do not stop the service (the rest of the config is fine), but each
 * gets a warning at start and reload, naming the mapping.
 */
function mappingWarnings(hooks: RawConfig['hooks']): string[] {
  const warnings: string[] = [];
  hooks.mappings.forEach((m, i) => {
    const at = `hooks.mappings[${i}]`;
    const path = m.match?.path;
    if (path === 'wake' || path === 'agent')
      warnings.push(`${at}: match.path "${path}" never matches: /${path} is a direct route and takes precedence over mappings`);
    if (path === '')
      warnings.push(`${at}: match.path is empty after normalisation, so it only matches "${hooks.path}" itself, which is answered 404; omit match.path to match every path`);
    if (m.action === 'agent' && m.sessionKey && isTemplated(m.sessionKey) && !hooks.allowRequestSessionKey)
      warnings.push(
        `${at}.sessionKey is templated but hooks.allowRequestSessionKey is false: every agent request to this mapping is refused (400 session_key_not_allowed); set allowRequestSessionKey: true or use a static key`,
      );
    // Shadowing: an earlier mapping that matches everything this one does (same or no path, same or no source).
    const earlier = hooks.mappings.slice(0, i).findIndex(
      (e) =>
        (e.match?.path === undefined || e.match.path === path) &&
        (e.match?.source === undefined || e.match.source === m.match?.source),
    );
    if (earlier >= 0) warnings.push(`${at} never matches: hooks.mappings[${earlier}] matches every request it would (first match wins)`);
  });
  return warnings;
}
