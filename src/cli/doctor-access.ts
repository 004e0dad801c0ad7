/**
 * `hookgate doctor`: can the service read its files? The config file and the secret files it names (`{ file: ... }`)
 * must be readable by the user the service runs as; the environment file (systemd's EnvironmentFile=, read by
 * systemd as root) must hold its secrets private. Checked for the user running the doctor (by the kernel's own
 * answer) and, with `--service-user NAME`, for that user from the files' owners and modes (ACLs are not read).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, parse as parsePath, resolve } from 'node:path';
import JSON5 from 'json5';
import { exposedPaths } from '../private-files.js';
import { logPath } from '../text-safe.js';
import { type Finding, finding } from './doctor-format.js';
import { readEnvFile } from './env-file.js';

/** Who reads: a real user's ids, or (uid undefined) a DynamicUser= one, which owns none of the files and is in none of their groups. */
export interface Reader {
  name: string;
  uid: number | undefined;
  gids: number[];
}

function idOf(name: string, flag: '-u' | '-G'): string | undefined {
  const r = spawnSync('id', [flag, '--', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The user `name` as the system knows it; a name it does not know is taken for the unit's dynamic user. */
export function readerFor(name: string): Reader {
  const uid = idOf(name, '-u');
  if (uid === undefined || !/^\d+$/.test(uid)) return { name, uid: undefined, gids: [] };
  const gids = (idOf(name, '-G') ?? '')
    .split(/\s+/)
    .filter((g) => /^\d+$/.test(g))
    .map(Number);
  return { name, uid: Number(uid), gids };
}

/** The first path on the way to `file` that `reader` cannot pass (a directory it cannot search) or read; undefined when it can read it. */
export function blockedFor(file: string, reader: Reader): string | undefined {
  if (reader.uid === 0) return undefined;
  const abs = resolve(file);
  const dirs: string[] = [];
  for (let d = dirname(abs); ; d = dirname(d)) {
    dirs.unshift(d);
    if (d === parsePath(d).root) break;
  }
  const allowed = (path: string, bit: 4 | 1) => {
    const st = statSync(path);
    const shift = st.uid === reader.uid ? 6 : reader.gids.includes(st.gid) ? 3 : 0;
    return ((st.mode >> shift) & bit) !== 0;
  };
  for (const d of dirs) if (!allowed(d, 1)) return `${logPath(d, 300)} (directory ${describe(d)}: cannot be searched)`;
  return allowed(abs, 4) ? undefined : `${logPath(abs, 300)} (${describe(abs)})`;
}

function describe(path: string): string {
  const st = statSync(path);
  return `uid ${st.uid} gid ${st.gid} mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}`;
}

/** The secret files a config names as `{ file: "path" }` (relative to its directory); those built with `${VAR}` are skipped. */
export function secretFiles(configFile: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON5.parse(readFileSync(configFile, 'utf8'));
  } catch {
    return [];
  }
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (v === null || typeof v !== 'object') return;
    const obj = v as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (keys.length === 1 && keys[0] === 'file' && typeof obj.file === 'string') {
      if (!obj.file.includes('${')) out.push(resolve(dirname(configFile), obj.file));
      return;
    }
    Object.values(obj).forEach(walk);
  };
  walk(parsed);
  return [...new Set(out)];
}

export interface AccessOptions {
  configFile: string;
  /** The environment file; default: hookgate.env next to the config, when there is one. */
  envFile?: string;
  serviceUser?: string;
}

export function checkAccess(opts: AccessOptions): Finding[] {
  const out: Finding[] = [];
  const files = [opts.configFile, ...secretFiles(opts.configFile)].filter((f) => existsSync(f));
  const me = process.getuid?.();
  const unreadable = files.filter((f) => {
    try {
      accessSync(f, constants.R_OK);
      return false;
    } catch {
      return true;
    }
  });
  const names = files.map((f) => logPath(f, 200)).join(', ');
  out.push(
    unreadable.length
      ? finding(
          'fail',
          'file access',
          `not readable by you (uid ${me}): ${unreadable.map((f) => logPath(f, 200)).join(', ')}`,
          "run the doctor as the service's user, or fix the owner or mode",
        )
      : finding('ok', 'file access', `readable by you (uid ${me}): ${names}`),
  );
  if (opts.serviceUser) out.push(serviceUserFinding(files, readerFor(opts.serviceUser)));
  else if (me === 0) {
    out.push(
      finding(
        'ok',
        'file access',
        "run as root, which reads everything: pass --service-user NAME to check the files as the service's user",
      ),
    );
  }
  const envFile = envFileFor(opts.configFile, opts.envFile);
  if (existsSync(envFile)) out.push(envFileFinding(envFile));
  else if (opts.envFile)
    out.push(
      finding('fail', 'env file', `${logPath(envFile, 300)} does not exist`, 'hookgate init --service writes it'),
    );
  return out;
}

/** `--env-file`, else hookgate.env next to the config (the layout of `init --service`). */
export function envFileFor(configFile: string, flag: string | undefined): string {
  return flag ? resolve(flag) : join(dirname(configFile), 'hookgate.env');
}

/**
 * Sets the environment file's variables in this process, as systemd sets them in the service's, so the config is
 * checked as the service will load it. Undefined when there is no such file or it cannot be read.
 */
export function applyEnvFile(envFile: string): Finding | undefined {
  if (!existsSync(envFile)) return undefined;
  const vars = readEnvFile(envFile);
  const shown = logPath(envFile, 300);
  if (!vars)
    return finding(
      'warn',
      'env file',
      `${shown}: cannot be read by you; the config is checked without its variables`,
      'run the doctor as root (systemd reads it as root)',
    );
  for (const [k, v] of vars) process.env[k] = v;
  return finding(
    'ok',
    'env file',
    `${shown}: ${vars.size} variable${vars.size === 1 ? '' : 's'} set for these checks, as systemd sets them for the service`,
  );
}

function serviceUserFinding(files: string[], reader: Reader): Finding {
  const who =
    reader.uid === undefined
      ? `user ${reader.name} (not a user here: checked as a DynamicUser= one, which owns none of the files and is in none of their groups)`
      : `user ${reader.name} (uid ${reader.uid})`;
  const blocked = files.map((f) => blockedFor(f, reader)).filter((b): b is string => b !== undefined);
  if (!blocked.length)
    return finding('ok', 'service user', `${who} can read ${files.map((f) => logPath(f, 200)).join(', ')}`);
  return finding(
    'fail',
    'service user',
    `${who} cannot read: ${blocked.join('; ')}`,
    'keep secrets out of the config ({ env: "NAME" } set in the env file: hookgate init --service) and make it 0644, or give the file to that user',
  );
}

function envFileFinding(envFile: string): Finding {
  const shown = logPath(envFile, 300);
  const exposed = exposedPaths([envFile]);
  if (exposed.length)
    return finding(
      'warn',
      'env file',
      `${shown} is readable by group or others (${exposed[0]!.mode}); it holds secrets`,
      `chmod 600 ${shown}`,
    );
  return finding(
    'ok',
    'env file',
    `${shown}: private to its owner (systemd reads it as root before starting the service)`,
  );
}
