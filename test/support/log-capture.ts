import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.js';

/** A logger whose JSON lines are kept in `lines`, parsed, for tests that check what was logged. */
export function captureLogger(level: 'debug' | 'info' = 'info'): {
  lines: Array<Record<string, unknown>>;
  logger: Logger;
} {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const l of chunk.toString('utf8').split('\n'))
        if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger(level, { pretty: false, destination }) };
}
