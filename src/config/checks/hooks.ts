import { startsWithAny } from '../lookup.js';
import type { RawConfig } from '../schema/index.js';
import { checkTokenList, hasTokens, judgeTokenStrength } from './tokens.js';
import type { ConfigFindings } from './types.js';

/** `hooks.*` on its own: a token when enabled, a usable path, session-key prefixes that admit the default key. */
export function checkHooks(config: RawConfig): ConfigFindings {
  const { hooks } = config;
  const issues: ConfigFindings['issues'] = [];
  const warnings: string[] = [];
  if (hooks.enabled && !hasTokens(hooks))
    issues.push({ path: 'hooks.token', message: 'hooks.enabled requires hooks.token' });
  if (hooks.path === '/') issues.push({ path: 'hooks.path', message: "hooks.path may not be '/'" });
  if (hooks.token) judgeTokenStrength({ issues, warnings }, 'hooks.token', hooks.token, undefined);
  const listed = checkTokenList('hooks', hooks, Date.now());
  issues.push(...listed.issues);
  warnings.push(...listed.warnings);

  const prefixes = hooks.allowedSessionKeyPrefixes;
  if (prefixes !== undefined && prefixes.length > 0) {
    if (hooks.defaultSessionKey && !startsWithAny(hooks.defaultSessionKey, prefixes)) {
      issues.push({
        path: 'hooks.defaultSessionKey',
        message: 'hooks.defaultSessionKey must match hooks.allowedSessionKeyPrefixes',
      });
    }
    if (!hooks.defaultSessionKey && !startsWithAny('hook:example', prefixes)) {
      issues.push({
        path: 'hooks.allowedSessionKeyPrefixes',
        message: "hooks.allowedSessionKeyPrefixes must include 'hook:' when hooks.defaultSessionKey is unset",
      });
    }
  }
  return { issues, warnings };
}

/** Last, so it ends the list of warnings: the most likely reason a user sees only 404s. */
export function checkHooksEnabled(config: RawConfig): ConfigFindings {
  return {
    issues: [],
    warnings: config.hooks.enabled ? [] : ['hooks.enabled is not true: every request under hooks.path answers 404'],
  };
}
