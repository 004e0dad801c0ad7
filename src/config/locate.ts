/** Which config file a command uses, found the same way by every command (and without loading the schema). */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

/** Where a config comes from: the first of `--config`, `HOOKGATE_CONFIG`, `./hookgate.json5` that applies. */
export interface ConfigLocation {
  /** Absolute path, or undefined for the embedded default. */
  file: string | undefined;
  from: '--config' | '$HOOKGATE_CONFIG' | './hookgate.json5' | 'embedded default';
  /** What was looked for, in order, for a message when nothing is found. */
  looked: string[];
}

export function locateConfigFile(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): ConfigLocation {
  if (flag) return { file: resolve(cwd, flag), from: '--config', looked: [] };
  if (env.HOOKGATE_CONFIG) return { file: resolve(cwd, env.HOOKGATE_CONFIG), from: '$HOOKGATE_CONFIG', looked: [] };
  const local = resolve(cwd, 'hookgate.json5');
  const looked = ['--config (not given)', '$HOOKGATE_CONFIG (not set)', `${local} (no such file)`];
  return existsSync(local)
    ? { file: local, from: './hookgate.json5', looked: [] }
    : { file: undefined, from: 'embedded default', looked };
}

/** `--config`, else `HOOKGATE_CONFIG`, else `./hookgate.json5` when it exists, else undefined (embedded default). */
export function findConfigFile(
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): string | undefined {
  return locateConfigFile(flag, env, cwd).file;
}
