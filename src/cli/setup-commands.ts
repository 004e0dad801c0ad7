/** Commands that set hookgate up: init, config check, token (and token rotate), completion (serve: serve-command.ts). */
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { Argument, type Command } from 'commander';
import { existingEmbeddedToken, newToken } from '../config/defaults.js';
import { findConfigFile } from '../config/load.js';
import { CliError, ConfigError } from '../errors.js';
import { logSafe } from '../text-safe.js';
import { completionScript, type Shell, SHELLS } from './completion.js';
import { fullConfig } from './context.js';
import { printJson } from './format.js';
import { ignoreInGit } from './git-ignore.js';
import { configOption, jsonOption } from './options.js';
import { starterConfig } from './starter-config.js';
import { addTokenRotateCommand } from './token-command.js';
import { checkStoreConnection } from './store-connect.js';

export function addSetupCommands(program: Command): void {
  program
    .command('init')
    .description("write a commented starter config (mode 0600), keeping the embedded default's token if there is one")
    .argument('[file]', 'where to write it', 'hookgate.json5')
    .option('-f, --force', 'overwrite an existing file')
    .action((file: string, opts: { force?: boolean }) => init(file, opts.force ?? false));

  program
    .command('config')
    .description('config file tools')
    .command('check')
    .description('validate the config; exit 1 listing every problem by key path. --connect: also open the store (PostgreSQL: server and schema version)')
    .addOption(configOption())
    .addOption(jsonOption())
    .option('--connect', 'also connect to the store (PostgreSQL: server version, schema none/current/older/newer; SQLite: the file opens), creating nothing')
    .action(async (opts: { config?: string; json?: boolean; connect?: boolean }) => {
      let config;
      try {
        config = fullConfig(opts.config).config;
      } catch (err) {
        if (!(opts.json && err instanceof ConfigError)) throw err;
        printJson({ ok: false, config: findConfigFile(opts.config) ?? null, issues: err.issues });
        process.exitCode = 1;
        return;
      }
      const store = opts.connect ? await checkStoreConnection(config.storage, config.dir, config.file !== undefined) : undefined;
      const ok = !store?.some((f) => f.status === 'fail');
      if (!ok) process.exitCode = 1;
      if (opts.json) return printJson({ ok, config: config.file ?? null, warnings: config.warnings, ...(store ? { store } : {}) });
      for (const w of config.warnings) process.stdout.write(`warning: ${w}\n`);
      for (const f of store ?? []) process.stdout.write(`${f.what}: ${f.status}: ${logSafe(f.detail, 600)}${f.fix && f.status !== 'ok' ? ` → ${f.fix}` : ''}\n`);
      process.stdout.write(`${config.file ?? 'embedded default'}: ${ok ? 'ok' : 'the config is valid, but its store cannot be used'}\n`);
    });

  const token = program
    .command('token')
    .description('print a new random token (32 random bytes, base64url); `token rotate` adds one to the config file')
    .action(() => {
      process.stdout.write(`${newToken()}\n`);
    });
  addTokenRotateCommand(token);

  program
    .command('completion')
    .description('print a shell completion script: source <(hookgate completion bash), or see the README for zsh and fish')
    .addArgument(new Argument('<shell>', 'the shell').choices(SHELLS))
    .action((shell: Shell) => {
      process.stdout.write(completionScript(program, shell));
    });
}

/**
 * Writes the starter config. The token: the embedded default's (./data/hook-token next to the file) when there is
 * one, so `serve` picking the new file up changes nothing for senders already using it; a fresh one otherwise.
 */
function init(file: string, force: boolean): void {
  const path = resolve(file);
  if (existsSync(path) && !force) throw new CliError('cli_usage', `${path} exists; use --force to overwrite`);
  const kept = existingEmbeddedToken(dirname(path), {});
  const token = kept?.token ?? newToken();
  writeFileSync(path, starterConfig(token), { mode: 0o600 });
  chmodSync(path, 0o600); // an overwritten file keeps its old mode otherwise
  const out = [`wrote ${path} (mode 0600: it holds the hook token)`];
  if (kept) {
    out.push(`hook token: kept the embedded default's, from ${kept.from}; senders using it keep working`);
  } else {
    out.push(`hook token now in force (hooks.token in ${file}); senders must use it:`, `  ${token}`);
  }
  if (process.env.HOOKGATE_TOKEN) out.push('note: $HOOKGATE_TOKEN is set; it applies to the embedded default only, not to a config file');
  const ignored = ignoreInGit(path);
  if (ignored?.added) out.push(`added it to ${ignored.gitignore} (it holds secrets)`);
  else if (ignored) out.push('git already ignores it');
  const arg = relative(process.cwd(), path) || path;
  const quoted = /^[\w./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
  out.push(`start it with: npx hookgate serve --config ${quoted}   (from the checkout; \`hookgate serve ...\` once hookgate is on PATH)`);
  process.stdout.write(`${out.join('\n')}\n`);
}
