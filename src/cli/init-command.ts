/**
 * `hookgate init`: writes the embedded default as a commented config file, so switching to the file changes nothing
 * (hooks, the admin listener, the store, the tokens). `--service` writes the layout of the systemd unit instead: a
 * config with no secret in it (0644, readable by the unit's user) and an environment file (0600) holding the secrets.
 */
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { existingEmbeddedToken, newToken } from '../config/defaults.js';
import { CliError } from '../errors.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';
import { parseEnvFile } from './env-file.js';
import { ignoreInGit } from './git-ignore.js';
import { localValues, SERVICE_ENV, serviceValues, starterConfig } from './starter-config.js';

/** Where `init --service` writes by default: the paths of examples/systemd/hookgate.service. */
export const SERVICE_DIR = '/etc/hookgate';
export const SERVICE_STATE_DIR = '/var/lib/hookgate';
/** The config of a service holds no secret: its user (a DynamicUser= one owns nothing) must be able to read it. */
const PUBLIC_FILE_MODE = 0o644;

interface InitOptions {
  force?: boolean;
  service?: boolean;
  dir?: string;
  stateDir?: string;
}

export function addInitCommand(program: Command): void {
  program
    .command('init')
    .description(
      "write the embedded default as a commented config (hooks, admin listener, store, tokens kept); --service: the systemd unit's layout",
    )
    .argument('[file]', 'where to write it (default ./hookgate.json5; not with --service)')
    .option('-f, --force', 'overwrite an existing config file')
    .option(
      '--service',
      `the unit's layout: DIR/hookgate.json5 with no secret (0644) and DIR/hookgate.env with them (0600)`,
    )
    .option('--dir <dir>', `with --service: where to write both files (default ${SERVICE_DIR})`)
    .option(
      '--state-dir <dir>',
      `with --service: the unit's state directory, where the store goes (default ${SERVICE_STATE_DIR})`,
    )
    .action((file: string | undefined, opts: InitOptions) => {
      if (opts.service) {
        if (file !== undefined)
          throw new CliError(
            'cli_usage',
            'with --service, give the directory with --dir (it gets hookgate.json5 and hookgate.env), not a file',
          );
        initService(opts);
        return;
      }
      if (opts.dir || opts.stateDir) throw new CliError('cli_usage', '--dir and --state-dir go with --service');
      initLocal(file ?? 'hookgate.json5', opts.force ?? false);
    });
}

/** Creates the file's missing parent directories; a failure is a CliError naming the directory. */
function makeParent(path: string, mode: number): void {
  try {
    mkdirSync(dirname(path), { recursive: true, mode });
  } catch (err) {
    throw new CliError(
      'cli_write_failed',
      `cannot create ${dirname(path)} for ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

function writeAt(path: string, text: string, mode: number): void {
  try {
    writeFileSync(path, text, { mode });
    chmodSync(path, mode); // an overwritten file keeps its old mode otherwise
  } catch (err) {
    throw new CliError('cli_write_failed', `cannot write ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

function refuseOverwrite(path: string, force: boolean): void {
  if (existsSync(path) && !force) throw new CliError('cli_usage', `${path} exists; use --force to overwrite`);
}

const KEPT_SUMMARY = (listeners: string) =>
  `the embedded default, spelt out: hooks on (127.0.0.1:18789, /hooks), the admin listener on (${listeners}), the echo model, the log channel`;

/**
 * The config of a checkout. The tokens: the embedded default's (./data/hook-token and ./data/admin-token next to the
 * file) when there are, so senders and operators already using them keep working; fresh ones otherwise. A new hook
 * token is printed once (senders need it); the admin token never is (it is read from the file).
 */
function initLocal(file: string, force: boolean): void {
  const path = resolve(file);
  refuseOverwrite(path, force);
  makeParent(path, 0o755);
  const dir = dirname(path);
  const kept = existingEmbeddedToken(dir, {});
  const token = kept?.token ?? newToken();
  const adminFile = join(dir, 'data', 'admin-token');
  const adminKept = existsSync(adminFile) ? readFileSync(adminFile, 'utf8').trim() : '';
  writeAt(path, starterConfig(localValues(token, adminKept || newToken())), 0o600);
  const out = [`wrote ${path} (mode 0600: it holds the hook and admin tokens)`];
  out.push(
    `kept: ${KEPT_SUMMARY('127.0.0.1:18790: dashboard, /metrics, tail')}, the store ${join(dir, 'data/hookgate.db')}`,
  );
  if (kept) {
    out.push(`hook token: kept the embedded default's, from ${kept.from}; senders using it keep working`);
  } else {
    out.push(`hook token now in force (hooks.token in ${file}); senders must use it:`, `  ${token}`);
  }
  out.push(
    adminKept
      ? `admin token: kept the embedded default's, from ${adminFile}`
      : `admin token: new, in admin.token of ${file} (for the dashboard, tail and /metrics)`,
  );
  for (const name of ['HOOKGATE_TOKEN', 'HOOKGATE_ADMIN_TOKEN'] as const) {
    if (process.env[name])
      out.push(`note: $${name} is set; it applies to the embedded default only, not to a config file`);
  }
  out.push(...gitLines(path));
  const arg = relative(process.cwd(), path) || path;
  const quoted = /^[\w./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
  out.push(
    `start it with: npx hookgate serve --config ${quoted}   (from the checkout; \`hookgate serve ...\` once hookgate is on PATH)`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

function gitLines(...paths: string[]): string[] {
  const ignored = ignoreInGit(...paths);
  if (ignored?.added)
    return [`git: added it to ${ignored.excludeFile} (this clone's own ignore list; .gitignore is left alone)`];
  if (ignored) return ['git: already ignored'];
  return [];
}

/**
 * The unit's layout. An environment file that exists already is never rewritten (it may hold other secrets): the
 * variables it lacks are appended, so a second run keeps the tokens senders and operators already use.
 */
function initService(opts: InitOptions): void {
  const dir = resolve(opts.dir ?? SERVICE_DIR);
  const configFile = join(dir, 'hookgate.json5');
  const envFile = join(dir, 'hookgate.env');
  const storagePath = join(resolve(opts.stateDir ?? SERVICE_STATE_DIR), 'hookgate.db');
  refuseOverwrite(configFile, opts.force ?? false);
  makeParent(configFile, 0o755);

  const existing = existsSync(envFile) ? readFileSync(envFile, 'utf8') : undefined;
  const have = parseEnvFile(existing ?? '');
  const added = Object.values(SERVICE_ENV).filter((name) => !have.has(name));
  const lines = added.map((name) => `${name}=${newToken()}`);
  if (existing === undefined) {
    const header = [
      '# hookgate secrets, read by systemd (as root) before it starts the service: keep it 0600 root:root.',
      '# The config names each as { env: "NAME" }. Add your senders\' and channels\' secrets here too.',
    ];
    writeAt(envFile, `${[...header, ...lines].join('\n')}\n`, PRIVATE_FILE_MODE);
  } else if (lines.length) {
    const sep = existing === '' || existing.endsWith('\n') ? '' : '\n';
    try {
      appendFileSync(envFile, `${sep}${lines.join('\n')}\n`);
    } catch (err) {
      throw new CliError(
        'cli_write_failed',
        `cannot write ${envFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
  }
  writeAt(configFile, starterConfig(serviceValues(storagePath, envFile)), PUBLIC_FILE_MODE);

  const out = [
    `wrote ${configFile} (mode 0644: no secret in it, so the unit's user can read it)`,
    `kept: ${KEPT_SUMMARY('127.0.0.1:18790')}; the store ${storagePath}`,
  ];
  if (existing === undefined) out.push(`wrote ${envFile} (mode 0600: ${added.join(', ')}; systemd reads it as root)`);
  else if (added.length)
    out.push(`added ${added.join(', ')} to ${envFile}; its other lines and its mode are as they were`);
  else out.push(`kept ${envFile}: it already sets ${Object.values(SERVICE_ENV).join(', ')}`);
  out.push(
    `hook token: ${SERVICE_ENV.hookToken} in ${envFile}; give it to your senders`,
    `admin token: ${SERVICE_ENV.adminToken} in ${envFile}; for the dashboard, tail and /metrics`,
    ...gitLines(envFile),
    `next: install examples/systemd/hookgate.service and run \`hookgate doctor --config ${configFile} --service-user hookgate\``,
    '  (docs/operations.md, "Running under systemd", step by step)',
  );
  process.stdout.write(`${out.join('\n')}\n`);
}
