/**
 * `hookgate store migrate`: bring an existing store's schema up to this hookgate's, without starting the service.
 * Besides `serve`, the only command that changes a schema: every other one refuses an older store
 * (store/schema-version.ts), so an upgrade is a decision, not a side effect of `hookgate status`.
 */
import type { Command } from 'commander';
import { withStore } from './context.js';
import { printJson } from './format.js';
import { configOption, jsonOption } from './options.js';

export function addStoreMigrateCommand(store: Command): void {
  store
    .command('migrate')
    .description(
      "bring the store's schema up to this hookgate's (stop the older hookgate first: it refuses the migrated store). Besides `serve`, the only command that migrates",
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .action(async (o: { config?: string; json?: boolean }) => {
      let from = 0;
      let to = 0;
      await withStore(o.config, async () => {}, {
        schemaPolicy: 'migrate',
        onSchema: (found, now) => {
          from = found;
          to = now;
        },
      });
      if (o.json) return printJson({ ok: true, from, to, migrated: from !== to });
      process.stdout.write(
        from === to
          ? `the store is at schema ${to} already: nothing to migrate\n`
          : `migrated the store from schema ${from} to ${to}\n`,
      );
    });
}
