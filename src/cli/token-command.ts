/**
 * `hookgate token rotate [--admin] [--id ID] [--not-after-old DURATION|DATE] [--json]`: a new random token appended to
 * `hooks.tokens` (or `admin.tokens`) in the config file, the rest of the file kept as it is (token-rotate-edit.ts).
 * The new token is printed once, alone on stdout; what was done and what to do next go to stderr. A running
 * `hookgate serve` watches its config file and applies the new list at once; this command writes no audit record
 * (the reload's diff is the audit trail).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import JSON5 from 'json5';
import { newToken } from '../config/defaults.js';
import { locateConfigFile, parseConfig } from '../config/load.js';
import { parseDuration } from '../config/schema/common.js';
import { parseInstant, TOKEN_ID_PATTERN } from '../config/schema/tokens.js';
import { CliError, ConfigError } from '../errors.js';
import { printJson } from './format.js';
import { replaceFileKeepingMode } from './json5-edit.js';
import { configOption, jsonOption } from './options.js';
import { listedIds, newTokenId, rotateTokens } from './token-rotate-edit.js';

interface RotateOpts {
  admin?: boolean;
  id?: string;
  notAfterOld?: string;
  config?: string;
  json?: boolean;
}

export function addTokenRotateCommand(token: Command): void {
  token
    .command('rotate')
    .description(
      'append a new random token to hooks.tokens (--admin: admin.tokens) in the config file and print it once; the old tokens keep working (until --not-after-old)',
    )
    .option('--admin', 'rotate the admin listener token (admin.tokens) instead of the hook token')
    .option(
      '--id <id>',
      "the new token id, named in received records and logs (default: today's UTC date, e.g. 2026-11-25)",
    )
    .option(
      '--not-after-old <when>',
      'give every old token without an expiry one: a duration from now ("24h", "7d"; "0" = now) or an ISO date-time with a zone',
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .action((o: RotateOpts) => rotate(o, new Date()));
}

/** `--not-after-old` as an ISO date-time: a duration from `now`, or a date-time with a zone. */
export function notAfterFrom(value: string, now: Date): string {
  const ms = parseDuration(value);
  const at = ms !== undefined ? now.getTime() + ms : parseInstant(value);
  if (at === undefined)
    throw new CliError(
      'cli_usage',
      `--not-after-old: expected a duration ("24h", "7d", "0") or an ISO date-time with a zone ("2026-12-01T00:00:00Z"), got ${JSON.stringify(value)}`,
    );
  return new Date(at).toISOString();
}

function rotate(o: RotateOpts, now: Date): void {
  const section = o.admin ? 'admin' : 'hooks';
  const location = locateConfigFile(o.config);
  if (!location.file) {
    const where = o.admin ? '$HOOKGATE_ADMIN_TOKEN or ./data/admin-token' : '$HOOKGATE_TOKEN or ./data/hook-token';
    throw new CliError(
      'cli_config_missing',
      `no config file (looked at ${location.looked.join(', ')}): the embedded default has one token (${where}) and no list to rotate in. ` +
        'Run `hookgate init` (it keeps the embedded token), restart `hookgate serve` with that file, then run `hookgate token rotate` again.',
    );
  }
  const file = location.file;
  if (!existsSync(file)) throw new CliError('cli_config_missing', `${file} (from ${location.from}) does not exist`);
  if (o.id !== undefined && !TOKEN_ID_PATTERN.test(o.id))
    throw new CliError('cli_usage', '--id: 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit');
  const notAfterOld = o.notAfterOld === undefined ? undefined : notAfterFrom(o.notAfterOld, now);
  const text = readFileSync(file, 'utf8');
  let taken: string[] = [];
  try {
    taken = listedIds(JSON5.parse(text), section);
  } catch {
    /* rotateTokens says why */
  }
  const id = o.id ?? newTokenId(taken, now);
  const token = newToken();
  const edit = rotateTokens(text, { section, id, token, notAfterOld, now });
  if (edit.kind === 'refused') throw new CliError('cli_usage', `not writing ${file}: ${edit.reason}`);
  checkEdited(edit.text, file, section);
  replaceFileKeepingMode(file, edit.text);

  if (o.json) {
    printJson({
      ok: true,
      file,
      section,
      id,
      token,
      movedSingleToken: edit.moved,
      notAfterOld: notAfterOld ?? null,
      expiring: edit.expiring,
    });
    return;
  }
  process.stdout.write(`${token}\n`);
  const lines = [
    `added ${section}.tokens entry "${id}" to ${file}${edit.moved ? ` (${section}.token moved into ${section}.tokens as "default")` : ''}; the token above is shown only once`,
    edit.oldIds.length === 0
      ? 'there were no tokens before this one'
      : notAfterOld
        ? `${olds(edit.oldIds)} accepted until ${notAfterOld}${edit.expiring.length < edit.oldIds.length ? ' (or their own earlier notAfter)' : ''}, then refused with 401`
        : `${olds(edit.oldIds)} still valid: remove ${edit.oldIds.length > 1 ? 'them' : 'it'} (or run again with --not-after-old 24h) once every ${o.admin ? 'operator' : 'sender'} uses the new one`,
    'next:',
    '  1. a running `hookgate serve` applies the new list at once (it watches the config file; or send it SIGHUP); check its log for "config reloaded"',
    o.admin
      ? '  2. give the new token to the admin clients (dashboard, scripts: Authorization: Bearer <token>)'
      : `  2. give the new token to the senders (Authorization: Bearer <token>); the received records name the id "${id}" of each request that uses it (hookgate received)`,
    '  3. when the old tokens are no longer used, delete their entries from the file',
  ];
  process.stderr.write(`${lines.join('\n')}\n`);
}

const olds = (ids: string[]) =>
  `the old token${ids.length > 1 ? 's' : ''} ${ids.map((i) => `"${i}"`).join(', ')} ${ids.length > 1 ? 'are' : 'is'}`;

/**
 * The edited file must be valid where this command wrote. Its secrets' variables and files are the service's
 * business, not this shell's: a hole (an unset variable, a secret file this user cannot read) is not a problem here.
 */
function checkEdited(text: string, file: string, section: 'hooks' | 'admin'): void {
  const anyEnv = new Proxy(
    { ...process.env },
    { get: (t, k) => (typeof k === 'string' ? (t[k] ?? 'set-by-the-service-0123456789') : undefined) },
  );
  try {
    parseConfig(text, file, dirname(file), { env: anyEnv });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const mine = err.issues.filter(
      (i) =>
        (i.path === `${section}.token` || i.path.startsWith(`${section}.tokens`)) &&
        !/^cannot read secret file /.test(i.message),
    );
    if (mine.length)
      throw new CliError(
        'cli_usage',
        `not writing ${file}: the new ${section}.tokens would be invalid:\n${mine.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`,
      );
  }
}
