/** The hookgate command tree, built without parsing: main.ts runs it, completion and the tests read it. */
import { Command } from 'commander';
import { cliFlags } from './context.js';
import { addAuditCommand } from './audit-command.js';
import { addConnectCommand } from './connect-command.js';
import { addDoctorCommand } from './doctor.js';
import { addGmailCommands } from './gmail-command.js';
import { addImportCommand } from './openclaw-command.js';
import { addMappingsCommands } from './mappings-command.js';
import { addNodesCommand } from './nodes-command.js';
import { addStatusCommand } from './status-command.js';
import { addSendCommands } from './send.js';
import { addSetupCommands } from './setup-commands.js';
import { addStoreCommands } from './store-commands.js';
import { addStoreCopyCommand } from './store-copy.js';
import { addStoreMigrateCommand } from './store-migrate.js';
import { addTailCommand } from './tail.js';
import { VERSION } from '../version.js';

export function buildProgram(): Command {
  const program = new Command('hookgate')
    .description('Self-hosted webhook ingress for AI agents')
    .version(VERSION, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help for the command')
    .helpCommand('help [command]', 'show help for a command')
    .option('--verbose', 'say on stderr which config, store and token a command uses (and the HTTP status of send)')
    .showHelpAfterError()
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 1));
  program.hook('preAction', (_root, action) => {
    cliFlags.verbose = action.optsWithGlobals<{ verbose?: boolean }>().verbose === true;
  });
  addSetupCommands(program);
  addSendCommands(program);
  addStoreCommands(program);
  addNodesCommand(program);
  addStatusCommand(program);
  addStoreMigrateCommand(addStoreCopyCommand(program));
  addMappingsCommands(program);
  addDoctorCommand(program);
  addTailCommand(program);
  addConnectCommand(program);
  addGmailCommands(program);
  addAuditCommand(program);
  addImportCommand(program);
  return program;
}
