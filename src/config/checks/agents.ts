import type { RawConfig } from '../schema/index.js';
import type { ConfigFindings } from './types.js';

/** `agents.list`: unique ids, at most one default. */
export function checkAgents(config: RawConfig): ConfigFindings {
  const issues: ConfigFindings['issues'] = [];
  const ids = new Set<string>();
  config.agents.list.forEach((a, i) => {
    if (ids.has(a.id)) issues.push({ path: `agents.list[${i}].id`, message: `duplicate agent id "${a.id}"` });
    ids.add(a.id);
  });
  if (config.agents.list.filter((a) => a.default).length > 1)
    issues.push({ path: 'agents.list', message: 'at most one agent may be marked default: true' });
  return { issues, warnings: [] };
}
