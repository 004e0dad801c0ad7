/** `hookgate serve`: the service itself. Everything it runs is loaded when it starts, not when the CLI does. */
import type { Command } from 'commander';
import { findConfigFile } from '../config/locate.js';
import { tuneHeapForService } from '../heap-tuning.js';
import { configOption } from './options.js';

/** After a forced stop, the longest wait for the runs to be given back and the store closed. */
const FORCED_EXIT_MS = 5000;

export function addServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the service; SIGHUP reloads the config, SIGTERM or Ctrl-C stops it (a second one: at once)')
    .addOption(configOption())
    .action(async (opts: { config?: string }) => {
      // Before the server's modules load: a tighter old-generation growth (peak RSS, see heap-tuning.ts).
      tuneHeapForService();
      // Loaded here only: the commands that read the store never load the server (ingress, runtime, channels).
      const { startApp } = await import('../app.js');
      const app = await startApp({ configFile: findConfigFile(opts.config), watchConfig: true });
      // The first SIGTERM/SIGINT stops gracefully; a second one (Ctrl-C again) forces it: see docs/operations.md.
      let signals = 0;
      // Not while stopping: a reload would build a generation (channels, connections) that nothing disposes.
      process.on('SIGHUP', () => signals === 0 && void app.reload());
      const onSignal = () => {
        if (++signals > 1) {
          app.force();
          // Should closing the store hang, exit anyway: the 'exit' handler still kills the agents' process groups.
          setTimeout(() => process.exit(1), FORCED_EXIT_MS).unref();
          return;
        }
        const hint = process.stdin.isTTY || process.stdout.isTTY ? 'press Ctrl-C again to stop at once' : undefined;
        app.close({ hint }).then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.on('SIGTERM', onSignal);
      process.on('SIGINT', onSignal);
    });
}
