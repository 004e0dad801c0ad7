import { writeSync } from 'node:fs';
import pino, { type Logger } from 'pino';
import sonicBoom from 'sonic-boom';
import { redactFields, redactMessageArgs, redactTop } from './log-redact.js';

export type { Logger };

// sonic-boom is CommonJS: its class is the module itself, which its types call `SonicBoom`.
const { SonicBoom } = sonicBoom;
type SonicBoom = InstanceType<typeof SonicBoom>;

/**
 * At most this much log output waits in memory for stdout. A reader that stops reading (a stuck pipe, a paused
 * terminal) would otherwise grow the buffer for as long as requests come: past this, lines are dropped and counted,
 * and one warning says how many once stdout has caught up (`log_lines_dropped`).
 */
export const LOG_BUFFER_MAX_BYTES = 64 * 1024 * 1024;

export interface LoggerOptions {
  pretty?: boolean;
  /** A stream instead of stdout (tests, the CLI's stderr): written as is, without the buffer below. */
  destination?: NodeJS.WritableStream;
  /** Tests: where the buffered destination writes (a file path or a descriptor; default stdout) and its bound. */
  to?: string | number;
  bufferMaxBytes?: number;
}

/**
 * A terminal's log: one line per entry (its fields on that line), so that a reply the `log` channel prints stands
 * out among the routine lines around it (run finished, delivered, heartbeat) instead of drowning in their fields.
 */
export const PRETTY_OPTIONS = {
  colorize: true,
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,svc',
  singleLine: true,
} as const;

/**
 * JSON lines on stdout; human-readable when stdout is a TTY. Nothing that logs may pass a token, a secret or a
 * raw payload: payload-derived text goes through text-safe (`logSafe`) first. The redaction (log-redact.ts) is a second net.
 */
export function createLogger(level: string = 'info', opts: LoggerOptions = {}): Logger {
  const pretty = opts.pretty ?? (process.stdout.isTTY === true && !opts.destination && opts.to === undefined);
  const base: pino.LoggerOptions = {
    level,
    base: { svc: 'hookgate' },
    // What `redact.paths` ['token', '*.token', …] meant (see log-redact.ts), without its cost on every line.
    formatters: { log: redactLine, bindings: redactBindings },
    serializers: { err: redactError },
    hooks: { logMethod: redactLogCall },
  };
  if (pretty) return redactChildren(pino({ ...base, transport: { target: 'pino-pretty', options: PRETTY_OPTIONS } }));
  if (opts.destination) return redactChildren(pino(base, opts.destination as pino.DestinationStream));
  // maxWrite: sonic-boom writes at most this much per write, one write per turn of the event loop. At its default
  // (16 KiB) a busy loop logs faster than that and the buffer grows for as long as the load lasts (the heap's live
  // set and peak RSS with it); 64 KiB keeps up.
  const max = opts.bufferMaxBytes ?? LOG_BUFFER_MAX_BYTES;
  const dest = new SonicBoom({
    dest: opts.to ?? 1,
    sync: false,
    maxWrite: 64 * 1024,
    maxLength: max,
    contentMode: 'buffer',
  });
  const logger = redactChildren(pino(base, bufferedLines(dest)));
  reportDrops(dest, logger, max);
  return logger;
}

/**
 * The destination in sonic-boom's `buffer` mode, given each line as its UTF-8 bytes. Given strings, sonic-boom counts
 * the bytes of the whole chunk a line joins, for every line (a string it flattens first): while a write is under way,
 * a chunk of n lines cost O(n²), 7.6 % of an agent run's instructions with its two lines (docs/performance.md). As
 * bytes, a line's length is added to its chunk's.
 *
 * What is still buffered is written out when the process exits. A destination that fails (stdout's reader gone:
 * EPIPE) is given up: later lines are dropped, one line on stderr says why, and the exit does not wait on it. pino's
 * own `pino.destination` retried a failed write at exit every 100 ms for ever, so a `hookgate serve` whose stdout
 * pipe had closed never stopped.
 */
function bufferedLines(dest: SonicBoom): pino.DestinationStream {
  let failed = false;
  const fail = (err: NodeJS.ErrnoException) => {
    if (failed) return;
    failed = true;
    try {
      writeSync(
        2,
        `hookgate: the log destination failed (${err.code ?? err.message}); log lines are dropped from now on\n`,
      );
    } catch {
      // stderr is gone too: nothing left to tell
    }
  };
  dest.on('error', fail);
  /** Writes out what is buffered, now (at exit, and for pino's `fatal`); a failure gives the destination up. */
  const flushNow = () => {
    if (failed) return;
    try {
      dest.flushSync();
    } catch (err) {
      fail(err as NodeJS.ErrnoException);
    }
  };
  atExit.add(flushNow);
  dest.once('close', () => atExit.delete(flushNow));
  return {
    write: (line: string) => {
      if (!failed) dest.write(Buffer.from(line, 'utf8') as unknown as string);
    },
    flush: (cb?: (err?: Error) => void) => (failed ? cb?.() : dest.flush(cb)),
    flushSync: flushNow,
  } as pino.DestinationStream;
}

/** The flushes of the destinations still open, run when the process exits (one listener for them all). */
const atExit = new Set<() => void>();
process.once('exit', () => {
  for (const flush of atExit) flush();
});

/** Counts the lines the destination dropped (its buffer full) and logs one warning once it has drained. */
function reportDrops(dest: SonicBoom, logger: Logger, maxBytes: number): void {
  let dropped = 0;
  dest.on('drop', () => void dropped++);
  dest.on('drain', () => {
    if (dropped === 0) return;
    const n = dropped;
    dropped = 0;
    logger.warn(
      { dropped: n, code: 'log_lines_dropped' },
      `${n} log lines were dropped: stdout was not read fast enough and ${maxBytes} bytes of log output were waiting`,
    );
  });
}

const redactLine = (fields: Record<string, unknown>) => redactTop(fields, false);
const redactBindings = (fields: Record<string, unknown>) => redactTop(fields, true);
const redactError = (err: unknown) => redactFields(pino.stdSerializers.err(err as Error));

function redactLogCall(this: Logger, args: unknown[], method: (...args: unknown[]) => void): void {
  if (args.length > 1) redactMessageArgs(args);
  method.apply(this, args);
}

/**
 * pino runs `formatters.bindings` on the root's bindings only, never a child's: bindings given to `child` (and
 * `setBindings`) are redacted here instead. Children inherit these from the root, grandchildren included.
 */
function redactChildren(logger: Logger): Logger {
  const child = logger.child;
  const setBindings = logger.setBindings;
  logger.child = function (this: Logger, bindings, options) {
    return child.call(this, redactTop(bindings, true), options);
  } as typeof child;
  logger.setBindings = function (this: Logger, bindings) {
    setBindings.call(this, redactTop(bindings, true));
  };
  return logger;
}
