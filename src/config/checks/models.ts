import type { ConfigIssue } from '../../errors.js';
import { ModelCatalog } from '../model-catalog.js';
import type { RawConfig } from '../schema/index.js';
import { isTemplated } from '../template-syntax.js';
import type { ConfigFindings } from './types.js';

/** Checks one model ref (static refs only: a templated one is resolved per request). */
export type ModelRefCheck = (ref: string | undefined, path: string, mustBeAllowed: boolean) => void;

/** A ref checker over `catalog` that pushes what it finds into `issues`. */
export function modelRefCheck(catalog: ModelCatalog, issues: ConfigIssue[]): ModelRefCheck {
  return (ref, path, mustBeAllowed) => {
    if (ref === undefined || isTemplated(ref)) return;
    const r = mustBeAllowed ? catalog.resolveAllowed(ref) : catalog.resolve(ref);
    if (!r.ok) issues.push({ path, message: r.reason });
  };
}

/** Every configured model ref resolves; the agents' and the gmail preset's models are also allowed. */
export function checkModels(config: RawConfig): ConfigFindings {
  const { agents, hooks } = config;
  const issues: ConfigIssue[] = [];
  const catalog = new ModelCatalog(config);
  const checkModel = modelRefCheck(catalog, issues);
  checkModel(agents.defaults.model, 'agents.defaults.model', true);
  agents.list.forEach((a, i) => {
    checkModel(a.model, `agents.list[${i}].model`, true);
  });
  checkModel(hooks.gmail.model, 'hooks.gmail.model', true);
  const allow = agents.defaults.models;
  if (allow) {
    const refs = Array.isArray(allow) ? allow : Object.keys(allow);
    for (const ref of refs) {
      const r = catalog.resolve(ref);
      if (!r.ok) issues.push({ path: 'agents.defaults.models', message: r.reason });
    }
  }
  return { issues, warnings: [] };
}
