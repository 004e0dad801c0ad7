import type { RawConfig } from '../schema/index.js';
import type { CheckResult } from './types.js';

/** `admin.*`: a token when enabled, and not the hook token. */
export function checkAdmin(config: RawConfig): CheckResult {
  const { admin, hooks } = config;
  const issues: CheckResult['issues'] = [];
  const warnings: string[] = [];
  if (admin.enabled && !admin.token) issues.push({ path: 'admin.token', message: 'admin.enabled requires admin.token' });
  if (hooks.token && admin.token && hooks.token === admin.token)
    warnings.push('hooks.token equals admin.token: use a dedicated hook token (`hookgate token`)');
  return { issues, warnings };
}
