/**
 * `hookgate store copy --from data/hookgate.db [--to postgres://…]`: move a SQLite store into PostgreSQL (the engine
 * is src/store/copy-to-postgres.ts). Without --to, the destination is the config's storage (driver postgres): the
 * URL, which carries a password, then stays out of the shell's history. The URL is only ever shown redacted.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { databaseUrlProblem, isPostgresUrl } from '../config/database-url.js';
import { loadStorageConfig } from '../config/load.js';
import { CliError, StoreCopyError } from '../errors.js';
import type { CopyTableResult } from '../store/copy-to-postgres.js';
import { logPath, safeUrl } from '../text-safe.js';
import { announce, locate } from './context.js';
import { printJson } from './format.js';
import { configOption, jsonOption } from './options.js';

interface CopyCliOptions {
  from: string;
  to?: string;
  config?: string;
  json?: boolean;
  force?: boolean;
}

const BAR_WIDTH = 24;

/** `hookgate store copy`; returns the `store` command, which `store migrate` joins. */
export function addStoreCopyCommand(program: Command): Command {
  const store = program
    .command('store')
    .description('the store itself: migrate its schema, move SQLite into PostgreSQL (docs/scale-out.md)');
  store
    .command('copy')
    .description(
      "copy a SQLite store's work (runs, events, sessions, deliveries, idempotency keys, received records) into PostgreSQL; stop the service first. Safe to run again: copies only what is missing",
    )
    .requiredOption('--from <file>', 'the SQLite store file (storage.path of the old config, e.g. data/hookgate.db)')
    .option(
      '--to <url>',
      'the PostgreSQL URL (postgres://user:password@host/db); default: storage.url of the config (driver postgres), which keeps the password out of the shell history',
    )
    .option('--force', "copy even while the source's node registry shows a running service")
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: CopyCliOptions) => {
      const from = resolve(o.from);
      const to = destination(o);
      const shown = safeUrl(to);
      announce(`copying ${logPath(from, 300)} into ${shown}`);
      process.stderr.write(
        'hookgate: the service using the source must be stopped: work it accepts after the copy starts is not copied\n',
      );
      // Loaded here only: the PostgreSQL client is not loaded by every CLI command.
      const { copySqliteToPostgres } = await import('../store/copy-to-postgres.js');
      const bar = !o.json && process.stderr.isTTY ? new ProgressBar() : undefined;
      const results = await copySqliteToPostgres({
        from,
        to,
        force: o.force ?? false,
        onProgress: (table, done, total) => bar?.draw(table, done, total),
      }).finally(() => bar?.end());
      const copied = results.reduce((n, r) => n + r.copied, 0);
      const present = results.reduce((n, r) => n + r.present, 0);
      if (o.json) return printJson({ ok: true, from, to: shown, copied, present, tables: results });
      for (const r of results) process.stdout.write(`${summary(r)}\n`);
      process.stdout.write(
        `copied ${copied} row${copied === 1 ? '' : 's'} into ${shown}${present ? ` (${present} already there, left as they were)` : ''}\n` +
          'next: set storage to { driver: "postgres", url: ... } in the config of every node, then start them (docs/scale-out.md)\n',
      );
    });
  return store;
}

/** --to, else the config's postgres storage; refused unless it is a usable PostgreSQL URL. */
function destination(o: CopyCliOptions): string {
  if (o.to !== undefined) {
    if (!isPostgresUrl(o.to)) {
      throw new StoreCopyError(
        'copy_destination_invalid',
        '--to must be a PostgreSQL URL (postgres://user:password@host:5432/database): store copy moves a SQLite store into PostgreSQL only',
      );
    }
    const problem = databaseUrlProblem(o.to);
    if (problem) throw new StoreCopyError('copy_destination_invalid', `--to ${problem}`);
    return o.to;
  }
  const location = locate(o.config);
  const storage = loadStorageConfig(location.file).storage;
  if (storage.driver !== 'postgres') {
    throw new CliError(
      'cli_usage',
      `no destination: --to is not given, and the storage of ${location.file ? logPath(location.file, 300) : 'the embedded default'} is ${storage.driver}, not postgres. Pass --to postgres://… or --config FILE with storage.driver "postgres"`,
    );
  }
  return storage.url;
}

function summary(r: CopyTableResult): string {
  const present = r.present ? `, ${r.present} already there` : '';
  return `${r.table}: ${r.total} row${r.total === 1 ? '' : 's'}, ${r.copied} copied${present}`;
}

/** One line per table on a terminal, redrawn in place: `runs           [#####-----]  1200/5000`. */
class ProgressBar {
  private table: string | undefined;

  draw(table: string, done: number, total: number): void {
    if (this.table !== undefined && this.table !== table) process.stderr.write('\n');
    this.table = table;
    const filled = total ? Math.round((done / total) * BAR_WIDTH) : BAR_WIDTH;
    const bar = `${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}`;
    process.stderr.write(`\r${table.padEnd(16)} [${bar}] ${done}/${total}`);
  }

  end(): void {
    if (this.table !== undefined) process.stderr.write('\n');
  }
}
