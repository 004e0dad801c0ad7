/**
 * The secret `hookgate connect` gives a sender's entry. A sender that lets the user choose it (GitHub: its setup says
 * `generate`) gets 32 random bytes, printed once for the user to paste there; a sender that shows one (Stripe, Slack)
 * has it read from a file, stdin or a prompt that does not echo, and never printed. Either way the value goes into a
 * file of the data directory (0600, the directory 0700) that the entry references, or the entry names a variable of
 * the service's environment (`--secret-env`).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { newToken } from '../config/defaults.js';
import { CliError } from '../errors.js';
import type { SenderPreset } from '../hooks/mappings/presets/sender.js';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from '../private-files.js';
import type { SecretValue } from './connect-edit.js';

export interface SecretOptions {
  secretFile?: string;
  secretEnv?: string;
}

export interface ConnectSecret {
  /** What the entry holds: `{ file }` (relative to the config's directory) or `{ env }`. */
  ref: Exclude<SecretValue, string>;
  /** The value, when this command knows it (to check the entry before writing); never printed unless `generated`. */
  value?: string;
  /** The file to write `value` into (absolute), when it is new. */
  write?: string;
  /** The file (as the entry names it) holds a secret made earlier, kept as it is. */
  kept?: boolean;
  /** Made here: the user must paste it into the sender, so it is printed, once. */
  generated?: boolean;
}

const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The file a path's secret is kept in: `<data dir>/<path>-webhook-secret`. */
export function secretFileFor(dataDir: string, path: string): string {
  return join(dataDir, `${path.replace(/[^\w.-]+/g, '-')}-webhook-secret`);
}

/** A path as the config references it: relative to the config's directory (`./data/…`) when under it. */
function refPath(configDir: string, file: string): string {
  const rel = relative(configDir, file);
  return rel.startsWith('..') || isAbsolute(rel) ? file : `./${rel}`;
}

export async function obtainSecret(
  preset: SenderPreset,
  o: SecretOptions,
  configDir: string,
  file: string,
): Promise<ConnectSecret> {
  if (o.secretEnv !== undefined && o.secretFile !== undefined) {
    throw new CliError('cli_usage', 'give the secret one way: --secret-file or --secret-env, not both');
  }
  if (o.secretEnv !== undefined) {
    if (!ENV_NAME_RE.test(o.secretEnv)) {
      const got = JSON.stringify(o.secretEnv);
      throw new CliError(
        'cli_usage',
        `--secret-env: expected an environment variable's name (letters, digits, _), got ${got}`,
      );
    }
    return { ref: { env: o.secretEnv } };
  }
  const ref = { file: refPath(configDir, file) };
  if (o.secretFile !== undefined) return { ref, value: readSecretFile(o.secretFile), write: file };
  if (preset.setup.secret === 'generate') {
    const existing = existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
    if (existing) return { ref, value: existing, kept: true };
    const value = preset.setup.secretFormat === 'hex' ? randomBytes(32).toString('hex') : newToken();
    return { ref, value, write: file, generated: true };
  }
  if (process.stdin.isTTY) {
    const value = (
      await promptHidden(`${preset.title}'s signing secret (paste it, then Enter; it is not shown): `)
    ).trim();
    if (!value) throw new CliError('cli_usage', 'no secret given; nothing was written');
    return { ref, value, write: file };
  }
  throw new CliError(
    'cli_usage',
    `${preset.title} shows you the secret it signs with: give it to hookgate with --secret-file FILE (- reads it from stdin), ` +
      'or --secret-env NAME (a variable of the environment hookgate serve runs in), or run this in a terminal to be asked for it ' +
      '(not echoed). Nothing was written.',
  );
}

/** `--secret-file`: a file's content, or stdin's with `-`, trimmed. The value is never part of a message. */
function readSecretFile(spec: string): string {
  let text: string;
  try {
    text = readFileSync(spec === '-' ? 0 : resolve(spec), 'utf8');
  } catch (err) {
    throw new CliError(
      'cli_usage',
      `--secret-file ${spec}: cannot read it: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  const value = text.trim();
  if (!value) throw new CliError('cli_usage', `--secret-file ${spec}: it is empty`);
  if (/[\r\n]/.test(value))
    throw new CliError('cli_usage', `--secret-file ${spec}: expected the secret alone, on one line`);
  return value;
}

/** Writes the secret private: the directory 0700 (when created), the file 0600 whatever the umask or its old mode. */
export function writeSecret(secret: ConnectSecret): void {
  if (!secret.write || secret.value === undefined) return;
  ensurePrivateDir(resolve(secret.write, '..'));
  writeFileSync(secret.write, `${secret.value}\n`, { mode: PRIVATE_FILE_MODE });
  chmodSync(secret.write, PRIVATE_FILE_MODE);
}

/** Reads one line from the terminal without echoing it (raw mode); Ctrl-C or Ctrl-D gives up. */
function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(question);
  return new Promise((resolvePrompt, reject) => {
    let value = '';
    const done = () => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
    };
    const onData = (chunk: string) => {
      for (const c of chunk) {
        if (c === '\r' || c === '\n') {
          done();
          return resolvePrompt(value);
        }
        if (c === '\u0003' || c === '\u0004') {
          done();
          return reject(new CliError('cli_usage', 'cancelled; nothing was written'));
        }
        value = c === '\u007f' || c === '\b' ? value.slice(0, -1) : value + c;
      }
    };
    stdin.setEncoding('utf8');
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onData);
  });
}
