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
  return pino(base, (opts.destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: false }));
}
