import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * JSON lines on stdout; human-readable when stdout is a TTY. Nothing that logs may pass a token, a secret or a
 * raw payload: payload-derived text goes through text-safe (`logSafe`) first. The redact list is a second net.
 */
export function createLogger(level: string = 'info', opts: { pretty?: boolean; destination?: NodeJS.WritableStream } = {}): Logger {
  const pretty = opts.pretty ?? (process.stdout.isTTY === true && !opts.destination);
  const base: pino.LoggerOptions = {
    level,
    base: { svc: 'hookgate' },
    redact: { paths: ['token', '*.token', 'authorization', '*.authorization', 'apiKey', '*.apiKey', 'secret', '*.secret', 'password', '*.password'], censor: '[redacted]' },
  };
  if (pretty) return pino({ ...base, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,svc' } } });
  // maxWrite: sonic-boom writes at most this much per write, one write per turn of the event loop. At its default
  // (16 KiB) a busy loop logged faster than that and the buffer grew for as long as the load lasted: the pinned
  // bench's backlog drain (2 lines per run, ~2,500 runs/s) grew the heap's live set 15 -> 34 MiB and peak RSS
  // 97 -> 122 MiB. With 1 MiB each write takes what gathered since the last one: no growth, peak RSS 96 MiB.
  return pino(base, (opts.destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: false, maxWrite: 1024 * 1024 }));
}
