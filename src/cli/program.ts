/**
 * The hookgate command tree. main.ts builds it for one command line: only the module of the command named there is
 * loaded (`hookgate send wake` never loads the store, the schema or the server), the whole tree when none is named
 * (help, completion, an unknown command: its "did you mean"). Completion and the tests build the whole tree.
 */
import { Command } from 'commander';
import { CliError } from '../errors.js';
import { VERSION } from '../version.js';
import { cliFlags } from './flags.js';
import { configOption } from './options.js';

type Register = (program: Command) => void;

/** The top-level commands, in the order help lists them, each with the module that registers it. */
const COMMANDS: ReadonlyArray<{ names: readonly string[]; load: () => Promise<Register> }> = [
  { names: ['serve'], load: async () => (await import('./serve-command.js')).addServeCommand },
  {
    names: ['init', 'config', 'token', 'completion'],
    load: async () => (await import('./setup-commands.js')).addSetupCommands,
  },
  { names: ['send'], load: async () => (await import('./send.js')).addSendCommands },
  {
    names: ['received', 'runs', 'sessions', 'deliveries'],
    load: async () => (await import('./store-commands.js')).addStoreCommands,
  },
  { names: ['nodes'], load: async () => (await import('./nodes-command.js')).addNodesCommand },
  { names: ['status'], load: async () => (await import('./status-command.js')).addStatusCommand },
  {
    names: ['store'],
    load: async () => {
      const [copy, migrate] = await Promise.all([import('./store-copy.js'), import('./store-migrate.js')]);
      return (program) => migrate.addStoreMigrateCommand(copy.addStoreCopyCommand(program));
    },
  },
  { names: ['mappings'], load: async () => (await import('./mappings-command.js')).addMappingsCommands },
  { names: ['doctor'], load: async () => (await import('./doctor.js')).addDoctorCommand },
  { names: ['tail'], load: async () => (await import('./tail.js')).addTailCommand },
  { names: ['connect'], load: async () => (await import('./connect-command.js')).addConnectCommand },
  { names: ['gmail'], load: async () => (await import('./gmail-command.js')).addGmailCommands },
  { names: ['audit'], load: async () => (await import('./audit-command.js')).addAuditCommand },
  { names: ['import'], load: async () => (await import('./openclaw-command.js')).addImportCommand },
];

/** The program with every command (`argv` omitted), or with those a command line needs (the arguments after `hookgate`). */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  const program = new Command('hookgate')
    .description('Self-hosted webhook ingress for AI agents')
    .version(VERSION, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help for the command')
    .helpCommand('help [command]', 'show help for a command')
    .option('--verbose', 'say on stderr which config, store and token a command uses (and the HTTP status of send)')
    // Also before the subcommand (`hookgate --config F status`): handed to the command that runs.
    .addOption(configOption())
    .showHelpAfterError()
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 1));
  program.hook('preAction', (root, action) => {
    cliFlags.verbose = root.opts<{ verbose?: boolean }>().verbose === true;
    const config = root.opts<{ config?: string }>().config;
    if (config === undefined || action === root) return;
    if (!action.options.some((o) => o.attributeName() === 'config')) {
      throw new CliError('cli_usage', `--config does not apply to \`${commandPath(action)}\`: it reads no config`);
    }
    if (action.getOptionValue('config') === undefined) action.setOptionValue('config', config);
  });
  const entries = argv ? commandsFor(argv) : COMMANDS;
  for (const register of await Promise.all(entries.map((c) => c.load()))) register(program);
  return program;
}

const commandPath = (c: Command): string => (c.parent ? `${commandPath(c.parent)} ${c.name()}` : c.name());

/** The options of the program itself that take a value (skipped when looking for the command's name). */
const ROOT_VALUE_OPTIONS = new Set(['-c', '--config']);

/** The commands a command line needs: the one it names, none for `--version`, all for help and completion. */
function commandsFor(argv: readonly string[]): typeof COMMANDS {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-V' || arg === '--version') return [];
    if (ROOT_VALUE_OPTIONS.has(arg)) {
      i++;
      continue;
    }
    if (arg === '--verbose' || arg.startsWith('--config=')) continue;
    // `completion` describes the whole tree.
    if (arg.startsWith('-') || arg === 'completion') return COMMANDS;
    const entry = COMMANDS.find((c) => c.names.includes(arg));
    return entry ? [entry] : COMMANDS;
  }
  return COMMANDS;
}
