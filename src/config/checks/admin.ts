import { isLoopbackHost } from '../../http-util.js';
import type { RawConfig } from '../schema/index.js';
import { allSecrets, checkTokenList, hasTokens, judgeTokenStrength } from './tokens.js';
import type { ConfigFindings } from './types.js';

/**
 * `admin.*`: a token when enabled, not the hook token, and a port of its own. A weak admin token (admin.token or an
 * admin.tokens entry) is a warning on a loopback bind and an error on any other: it grants the whole admin API.
 */
export function checkAdmin(config: RawConfig): ConfigFindings {
  const { admin, hooks } = config;
  const issues: ConfigFindings['issues'] = [];
  const warnings: string[] = [];
  if (admin.enabled && !hasTokens(admin))
    issues.push({ path: 'admin.token', message: 'admin.enabled requires admin.token' });
  const exposedOn = admin.enabled && !isLoopbackHost(admin.bind) ? admin.bind : undefined;
  if (admin.token) judgeTokenStrength({ issues, warnings }, 'admin.token', admin.token, exposedOn);
  const listed = checkTokenList('admin', admin, Date.now(), exposedOn);
  issues.push(...listed.issues);
  warnings.push(...listed.warnings);
  // Never the hooks port: the two listeners answer different callers with different credentials.
  if (admin.enabled && admin.port !== 0 && admin.port === config.gateway.port) {
    issues.push({
      path: 'admin.port',
      message: `must differ from gateway.port (${config.gateway.port}): the admin listener never shares the hooks port`,
    });
  }
  if (hooks.token && admin.token && hooks.token === admin.token)
    warnings.push(
      'hooks.token equals admin.token: use a dedicated hook token (`hookgate token`); the admin listener refuses the hook token, so it accepts no token until they differ',
    );
  else if (allSecrets(admin).some((a) => allSecrets(hooks).includes(a)))
    warnings.push(
      'an admin token (admin.token or admin.tokens) is also a hook token: the admin listener refuses every hook token, so that one is refused there',
    );
  return { issues, warnings };
}
