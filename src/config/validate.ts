import { checkAdmin } from './checks/admin.js';
import { checkAgents } from './checks/agents.js';
import { checkChannels } from './checks/channels.js';
import { checkGmail } from './checks/gmail.js';
import { checkHooks, checkHooksEnabled } from './checks/hooks.js';
import { checkMappings } from './checks/mappings.js';
import { checkModels } from './checks/models.js';
import { checkPresets } from './checks/presets.js';
import type { ConfigFindings, SectionCheck } from './checks/types.js';
import type { RawConfig } from './schema/index.js';

/** Each section's cross-key rules, in the order their findings are listed. */
const SECTION_CHECKS: readonly SectionCheck[] = [
  checkHooks,
  checkAgents,
  checkModels,
  checkChannels,
  checkMappings,
  checkPresets,
  checkGmail,
  checkAdmin,
  checkHooksEnabled,
];

/**
 * Rules that span keys (the schema checks each key alone), one module per section under `checks/`. Pure: no file
 * system. Returns problems (the config must not start) and warnings (it may).
 */
export function crossCheck(config: RawConfig): ConfigFindings {
  const issues: ConfigFindings['issues'] = [];
  const warnings: string[] = [];
  for (const check of SECTION_CHECKS) {
    const found = check(config);
    issues.push(...found.issues);
    warnings.push(...found.warnings);
  }
  return { issues, warnings };
}
