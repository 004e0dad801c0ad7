/** Commands that set hookgate up: init, config check, token (and token rotate), completion (serve: serve-command.ts). */
import { Argument, type Command } from 'commander';
import { newToken } from '../config/defaults.js';
import { findConfigFile } from '../config/load.js';
import { ConfigError } from '../errors.js';
import { logSafe } from '../text-safe.js';
import { completionScript, type Shell, SHELLS } from './completion.js';
import { fullConfig, UNSTARTED_DEFAULT_NOTE } from './context.js';
import { printJson } from './format.js';
import { addInitCommand } from './init-command.js';
import { configOption, jsonOption } from './options.js';
import { addTokenRotateCommand } from './token-command.js';
import { checkStoreConnection } from './store-connect.js';

export function addSetupCommands(program: Command): void {
  addInitCommand(program);

  program
    .command('config')
    .description('config file tools')
    .command('check')
    .description(
      'validate the config; exit 1 listing every problem by key path. --connect: also open the store (PostgreSQL: server and schema version)',
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .option(
      '--connect',
      'also connect to the store (PostgreSQL: server version, schema none/current/older/newer; SQLite: the file opens), creating nothing',
    )
    .action(async (opts: { config?: string; json?: boolean; connect?: boolean }) => {
      let config: ReturnType<typeof fullConfig>['config'];
      let unstarted: boolean | undefined;
      try {
        ({ config, unstarted } = fullConfig(opts.config));
      } catch (err) {
        if (!(opts.json && err instanceof ConfigError)) throw err;
        printJson({ ok: false, config: findConfigFile(opts.config) ?? null, issues: err.issues });
        process.exitCode = 1;
        return;
      }
      const store = opts.connect
        ? await checkStoreConnection(config.storage, config.dir, config.file !== undefined)
        : undefined;
      const ok = !store?.some((f) => f.status === 'fail');
      if (!ok) process.exitCode = 1;
      const notes = unstarted ? [UNSTARTED_DEFAULT_NOTE] : [];
      if (opts.json)
        return printJson({
          ok,
          config: config.file ?? null,
          warnings: config.warnings,
          notes,
          ...(store ? { store } : {}),
        });
      for (const w of config.warnings) process.stdout.write(`warning: ${w}\n`);
      for (const n of notes) process.stdout.write(`note: ${n}\n`);
      for (const f of store ?? [])
        process.stdout.write(
          `${f.what}: ${f.status}: ${logSafe(f.detail, 600)}${f.fix && f.status !== 'ok' ? ` → ${f.fix}` : ''}\n`,
        );
      process.stdout.write(
        `${config.file ?? 'embedded default'}: ${ok ? 'ok' : 'the config is valid, but its store cannot be used'}\n`,
      );
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
    .description(
      'print a shell completion script: source <(hookgate completion bash), or see the README for zsh and fish',
    )
    .addArgument(new Argument('<shell>', 'the shell').choices(SHELLS))
    .action((shell: Shell) => {
      process.stdout.write(completionScript(program, shell));
    });
}
