import { embeddedDefault } from './defaults.js';
import { type Config, loadConfigFile, validateConfig } from './load.js';

/**
 * Load the config the way `serve` does: the file, or the embedded default (creating its token once). `notice` is
 * what `serve` prints at the first start of the embedded default (where the generated token is kept).
 */
export function loadServeConfig(
  configFile: string | undefined,
  cwd: string,
  env: NodeJS.ProcessEnv,
): { config: Config; notice?: string } {
  if (configFile) return { config: loadConfigFile(configFile, { env }) };
  const def = embeddedDefault(cwd, env);
  const config = validateConfig(def.config, undefined, cwd, { env });
  const notice = def.generatedTokenFile
    ? `hookgate: no config file, using the embedded default. Hook token (kept in ${def.generatedTokenFile}):\n  ${def.token}\n`
    : undefined;
  return { config, notice };
}
