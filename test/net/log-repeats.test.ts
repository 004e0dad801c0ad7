import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Logger } from 'pino';
import { RepeatLimitedLog } from '../../src/net/log-repeats.js';

function fakeLogger() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => lines.push({ level, fields, msg });
  return { lines, logger: { warn: at('warn'), error: at('error') } as unknown as Logger };
}

describe('RepeatLimitedLog', () => {
  it('logs the first line of a kind, counts repeats, then one summary', () => {
    let now = 0;
    const { lines, logger } = fakeLogger();
    const log = new RepeatLimitedLog(logger, 10_000, () => now);
    for (let i = 0; i < 40_000; i++)
      log.error('unavailable', { path: 'wake' }, 'store unavailable: hook refused with 503');
    log.warn('unauthorized', {}, 'other message');
    assert.equal(lines.length, 2);
    assert.deepEqual(lines[0], {
      level: 'error',
      fields: { path: 'wake', code: 'unavailable' },
      msg: 'store unavailable: hook refused with 503',
    });
    now = 10_000;
    log.sweep(now);
    assert.equal(lines.length, 3);
    assert.equal(lines[2]!.msg, 'store unavailable: hook refused with 503 repeated 39999 times in the last 10 s');
    assert.equal(lines[2]!.level, 'error');
    // A new window: the first line is logged again.
    log.error('unavailable', {}, 'store unavailable: hook refused with 503');
    assert.equal(lines.length, 4);
  });

  it('the same message with another code is another kind', () => {
    const { lines, logger } = fakeLogger();
    const log = new RepeatLimitedLog(logger, 10_000, () => 0);
    log.warn('a', {}, 'could not record refusal counts');
    log.warn('b', {}, 'could not record refusal counts');
    log.warn('a', {}, 'could not record refusal counts');
    assert.equal(lines.length, 2);
  });
});
