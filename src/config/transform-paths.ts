import { ConfigError, type ConfigIssue } from '../errors.js';
import { resolveTransformModule, resolveTransformsDir } from './paths.js';
import type { RawConfig } from './schema/index.js';

/**
 * Path containment of transform modules, checked when the config loads (so `config check` and a reload catch
 * `..`, absolute paths and symlink escapes before any request): `hooks.transformsDir` must stay inside
 * `<config dir>/hooks/transforms`, and every `transform.module` inside it.
 */
export function checkTransformPaths(config: Pick<RawConfig, 'hooks'> & { dir: string }): ConfigIssue[] {
  const { transformsDir, mappings } = config.hooks;
  if (transformsDir === undefined && !mappings.some((m) => m.transform)) return [];
  const issues: ConfigIssue[] = [];
  const collect = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      if (err instanceof ConfigError) issues.push(...err.issues);
      else throw err;
    }
  };
  let dir: string | undefined;
  collect(() => {
    dir = resolveTransformsDir(config.dir, transformsDir);
  });
  if (dir === undefined) return issues;
  mappings.forEach((m, i) => {
    if (m.transform)
      collect(() => resolveTransformModule(dir!, m.transform!.module, `hooks.mappings[${i}].transform.module`));
  });
  return issues;
}
