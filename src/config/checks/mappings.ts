import type { ConfigIssue } from '../../errors.js';
import { agentAllowed, startsWithAny } from '../lookup.js';
import { ModelCatalog } from '../model-catalog.js';
import type { MappingConfig, SignatureConfig } from '../schema/hooks.js';
import type { RawConfig } from '../schema/index.js';
import { isTemplated } from '../template-syntax.js';
import { accountCheck, channelNameCheck } from './channels.js';
import { modelRefCheck } from './models.js';
import type { ConfigFindings } from './types.js';

/**
 * `hooks.mappings[]`: what each mapping needs to be usable (problems), unique ids, and mappings that can never work
 * as written (warnings: they do not stop the service, but each is named at start and reload).
 */
export function checkMappings(config: RawConfig): ConfigFindings {
  const { hooks } = config;
  const issues: ConfigIssue[] = [];
  const checkFields = actionFieldsCheck(config, issues);
  const checkBearer = bearerSecretCheck(config, issues);

  hooks.mappings.forEach((m, i) => {
    const at = `hooks.mappings[${i}]`;
    checkFields(m, at);
    checkBearer(m.signature, `${at}.signature`);
    if (m.sessionMode === 'persistent' && !m.sessionKey && !m.transform && hooks.defaultSessionKey === undefined) {
      issues.push({
        path: `${at}.sessionMode`,
        message:
          'sessionMode "persistent" needs a session key: set sessionKey on this mapping or hooks.defaultSessionKey (every request would be refused)',
      });
    }
    if (m.action === 'wake' && !m.textTemplate && !m.transform)
      issues.push({ path: `${at}.textTemplate`, message: 'a wake mapping needs textTemplate or a transform' });
    if (m.action === 'agent' && !m.messageTemplate && !m.transform)
      issues.push({ path: `${at}.messageTemplate`, message: 'an agent mapping needs messageTemplate or a transform' });
  });
  issues.push(...duplicateIds(hooks));
  return { issues, warnings: neverWorking(hooks) };
}

/**
 * A check that a `bearer` signature's secrets are no hook token: both arrive as `Authorization: Bearer`, so read as
 * the hook token the sender's secret would open every route. For a mapping's `signature` and a sender preset's
 * (alertmanager), pushing what it finds into `issues` at `at`.
 */
export function bearerSecretCheck(
  config: RawConfig,
  issues: ConfigIssue[],
): (signature: SignatureConfig | undefined, at: string) => void {
  const { hooks } = config;
  const hookTokens = new Set([...(hooks.token ? [hooks.token] : []), ...(hooks.tokens ?? []).map((t) => t.token)]);
  return (signature, at) => {
    if (signature?.scheme === 'bearer' && signature.secrets.some((s) => hookTokens.has(s)))
      issues.push({
        path: at,
        message:
          'a bearer secret must not be a hook token (hooks.token, hooks.tokens): it would also open /wake, /agent and every other route; give this sender a secret of its own',
      });
  };
}

/** The fields a mapping and a sender preset share: what an action needs to be usable. */
type ActionFields = Pick<MappingConfig, 'sessionKey' | 'model' | 'channel' | 'accountId' | 'agentId'>;

/**
 * A check of one mapping's (or sender preset's) own session key, model, channel, account and agent, pushing what it
 * finds into `issues` at `<at>.<key>`.
 */
export function actionFieldsCheck(config: RawConfig, issues: ConfigIssue[]): (m: ActionFields, at: string) => void {
  const { hooks } = config;
  const checkModel = modelRefCheck(new ModelCatalog(config), issues);
  const checkChannel = channelNameCheck(config, issues);
  const checkAccount = accountCheck(config, issues);
  const prefixes = hooks.allowedSessionKeyPrefixes;
  const hasPrefixes = prefixes !== undefined && prefixes.length > 0;
  return (m, at) => {
    if (m.sessionKey && isTemplated(m.sessionKey) && !hasPrefixes) {
      issues.push({
        path: `${at}.sessionKey`,
        message: 'hooks.allowedSessionKeyPrefixes is required when a hook mapping sessionKey uses templates',
      });
    }
    if (m.sessionKey && isTemplated(m.sessionKey) && !hooks.allowRequestSessionKey) {
      issues.push({
        path: `${at}.sessionKey`,
        message:
          'a templated sessionKey needs hooks.allowRequestSessionKey: true (without it every request to this mapping is refused, 400 session_key_not_allowed); set it, or use a static key',
      });
    }
    if (m.sessionKey && !isTemplated(m.sessionKey) && hasPrefixes && !startsWithAny(m.sessionKey, prefixes)) {
      issues.push({ path: `${at}.sessionKey`, message: `sessionKey must start with one of: ${prefixes.join(', ')}` });
    }
    checkModel(m.model, `${at}.model`, true);
    checkChannel(m.channel, `${at}.channel`);
    checkAccount(m.channel, m.accountId, `${at}.accountId`);
    if (m.agentId && hooks.allowedAgentIds && !agentAllowed(m.agentId, config))
      issues.push({ path: `${at}.agentId`, message: `agent "${m.agentId}" is not allowed by hooks.allowedAgentIds` });
  };
}

function duplicateIds(hooks: RawConfig['hooks']): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  hooks.mappings.forEach((m, i) => {
    if (m.id === undefined) return;
    const first = seen.get(m.id);
    if (first !== undefined)
      issues.push({
        path: `hooks.mappings[${i}].id`,
        message: `duplicate mapping id "${m.id}" (also hooks.mappings[${first}].id)`,
      });
    else seen.set(m.id, i);
  });
  return issues;
}

function neverWorking(hooks: RawConfig['hooks']): string[] {
  const warnings: string[] = [];
  hooks.mappings.forEach((m, i) => {
    const at = `hooks.mappings[${i}]`;
    const path = m.match?.path;
    if (path === 'wake' || path === 'agent')
      warnings.push(
        `${at}: match.path "${path}" never matches: /${path} is a direct route and takes precedence over mappings`,
      );
    if (path === '')
      warnings.push(
        `${at}: match.path is empty after normalisation, so it only matches "${hooks.path}" itself, which is answered 404; omit match.path to match every path`,
      );
    // Shadowing: an earlier mapping that matches everything this one does (same or no path, same or no source, and
    // each of its headers required by this one with the same value).
    const earlier = hooks.mappings
      .slice(0, i)
      .findIndex(
        (e) =>
          (e.match?.path === undefined || e.match.path === path) &&
          (e.match?.source === undefined || e.match.source === m.match?.source) &&
          headersAtLeastAsBroad(e.match?.headers, m.match?.headers),
      );
    if (earlier >= 0)
      warnings.push(
        `${at} never matches: hooks.mappings[${earlier}] matches every request it would (first match wins)`,
      );
  });
  return warnings;
}

/** Every request carrying `later`'s headers also carries `earlier`'s: each earlier header is required by later, same value. */
function headersAtLeastAsBroad(
  earlier: Readonly<Record<string, string>> | undefined,
  later: Readonly<Record<string, string>> | undefined,
): boolean {
  if (earlier === undefined) return true;
  return Object.entries(earlier).every(
    ([name, value]) => later !== undefined && Object.hasOwn(later, name) && later[name] === value,
  );
}
