/**
 * Extension channel `log`: each delivery becomes one JSON line — the same object a `webhook` delivery POSTs — on
 * stdout, or appended to `channels.log.path` (relative to the config file's directory). When stdout is a terminal
 * (someone is watching `hookgate serve`), a reply is printed for a person instead: `HH:MM:SS log → to · hook X`
 * (no `→ to` without a recipient),
 * then its text, indented. Piped or redirected stdout, and a file, get the JSON lines.
 *
 * Lines never interleave: each message is one `write` of one complete line. A file is opened once in append mode
 * (O_APPEND: the kernel puts every write at the end, even with other writers) and written synchronously; stdout
 * writes go through the process's single stdout stream, in order.
 */
import { constants, writeSync } from 'node:fs';
import { access, mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import type { z } from 'zod';
import type { logChannelSchema } from '../config/schema/channels.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from './types.js';
import { type CheckResult, checkFail, checkOk } from '../check.js';
import { logPath, logSafe, terminalSafe } from '../text-safe.js';
import { deliveryRecord } from './webhook.js';

export type LogChannelConfig = z.output<typeof logChannelSchema>;

/**
 * A log line has no length limit, so a reply is never split for this channel (the outbox would split only a reply
 * longer than this, which is far beyond any model output).
 */
export const LOG_MAX_TEXT_LENGTH = 1_000_000;

/** File errors that retrying will not fix: the path itself is wrong. Anything else (ENOSPC, EIO...) may pass. */
const PERMANENT_FS_ERRORS = new Set([
  'EACCES',
  'EPERM',
  'EISDIR',
  'ENOTDIR',
  'EEXIST',
  'EROFS',
  'ENAMETOOLONG',
  'ELOOP',
]);

export interface LogChannelOptions {
  /** For tests: where lines go when no `path` is configured (default process.stdout). Its `isTTY` picks the format. */
  stdout?: Writable & { isTTY?: boolean };
}

/** A delivery for a person at a terminal: a header line (local time, channel, recipient, hook), the text indented. */
export function humanLine(m: OutboundMessage): string {
  const at = new Date(m.createdAt);
  const time = Number.isNaN(at.getTime()) ? '--:--:--' : at.toTimeString().slice(0, 8);
  const source = m.hookName === null ? 'heartbeat' : `hook ${logSafe(m.hookName, 80)}`;
  const to = logSafe(m.to, 80);
  const header = `${time} ${logSafe(m.channel, 40)}${to ? ` → ${to}` : ''} · ${source}`;
  const body = terminalSafe(m.text)
    .trim()
    .split('\n')
    .map((l) => `  ${l}`.trimEnd())
    .join('\n');
  return `${header}\n${body}\n`;
}

export function createLogChannel(
  config: LogChannelConfig | undefined,
  ctx: ChannelContext,
  options: LogChannelOptions = {},
): Channel {
  const path = config?.path === undefined ? undefined : resolve(ctx.configDir, config.path);
  let handle: Promise<FileHandle> | undefined;

  // Opened on first use (and again after a failure), so a bad path is reported per delivery rather than at start.
  function file(p: string): Promise<FileHandle> {
    if (!handle) {
      const opening = (async () => {
        await mkdir(dirname(p), { recursive: true });
        // 0600: deliveries are agent replies, which may be private.
        return open(p, 'a', 0o600);
      })();
      handle = opening;
      opening.catch(() => {
        if (handle === opening) handle = undefined;
      });
    }
    return handle;
  }

  const stdout = options.stdout ?? process.stdout;
  // Decided once: a terminal stays a terminal, a pipe a pipe, for the life of the process.
  const human = path === undefined && stdout.isTTY === true;

  async function send(message: OutboundMessage): Promise<SendResult> {
    const line = Buffer.from(human ? humanLine(message) : `${JSON.stringify(deliveryRecord(message))}\n`, 'utf8');
    try {
      if (path === undefined) await writeStream(stdout, line);
      else {
        const fh = await file(path);
        let written = 0;
        // One write call per line; the loop only matters if the kernel ever accepts part of it. Synchronous, as
        // hookgate's own log lines are: an append of one line to a local file takes microseconds, where a promise
        // write goes through libuv's thread pool (far more CPU and an event-loop turn per delivery, and one route's
        // deliveries go one after another). A file on a network
        // filesystem that can hang would hold the event loop: keep `path` on a local disk (docs/channels.md).
        while (written < line.length) written += writeSync(fh.fd, line, written);
      }
      return { ok: true };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      const c = typeof code === 'string' ? code : 'write failed';
      return {
        ok: false,
        retryable: !PERMANENT_FS_ERRORS.has(c),
        error: `log channel: cannot write ${path === undefined ? 'stdout' : 'the log file'} (${c})`,
      };
    }
  }

  async function close(): Promise<void> {
    const h = handle;
    handle = undefined;
    if (h) await (await h.catch(() => undefined))?.close();
  }

  // `hookgate doctor`: the file (or the directory it would be created in) must be writable; nothing is created.
  const check = async (): Promise<CheckResult> =>
    path === undefined
      ? checkOk(human ? 'stdout (a terminal: readable lines)' : 'stdout (JSON lines)')
      : writableFile(path);

  return { id: 'log', maxTextLength: LOG_MAX_TEXT_LENGTH, send, close, check };
}

async function writableFile(path: string): Promise<CheckResult> {
  const shown = logPath(path, 300);
  try {
    await access(path, constants.W_OK);
    return checkOk(`appends to ${shown}`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      return checkFail(
        `cannot write ${shown} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        "fix the file's owner or mode, or change path",
      );
  }
  // Not there yet: the first delivery creates it (and missing directories) in the nearest existing ancestor.
  let dir = dirname(path);
  while (dirname(dir) !== dir) {
    try {
      await access(dir, constants.F_OK);
      break;
    } catch {
      dir = dirname(dir);
    }
  }
  try {
    await access(dir, constants.W_OK);
    return checkOk(`will create ${shown} on the first delivery`);
  } catch (err) {
    return checkFail(
      `cannot create ${shown}: ${logPath(dir, 300)} is not writable (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      "change path, or the directory's owner or mode",
    );
  }
}

function writeStream(stream: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolveWrite, reject) => {
    stream.write(chunk, (err) => (err ? reject(err) : resolveWrite()));
  });
}
