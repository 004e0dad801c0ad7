import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HttpError } from '../../src/errors.js';
import {
  normalizeAgent,
  normalizeWake,
  optionalString,
  parseWakeMode,
  sessionMode,
  timeoutSeconds,
  waitForCompletion,
} from '../../src/hooks/normalize.js';

function rejects400(fn: () => unknown, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof HttpError, `expected an HttpError, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, 'invalid_payload');
    if (message) assert.match(err.message, message);
    return true;
  });
}

describe('normalizeWake', () => {
  it('requires text: a non-blank string, trimmed', () => {
    assert.deepEqual(normalizeWake({ text: '  New mail  ' }), {
      text: 'New mail',
      mode: 'now',
      sessionKey: undefined,
      agentId: undefined,
    });
    for (const text of [undefined, null, '', '   ', '\n\t', 42, true, ['a'], { a: 1 }]) {
      rejects400(() => normalizeWake(text === undefined ? {} : { text }), /text required/);
    }
  });

  it('takes mode now (default) or next-heartbeat; anything else is 400', () => {
    assert.equal(normalizeWake({ text: 'x' }).mode, 'now');
    assert.equal(normalizeWake({ text: 'x', mode: 'now' }).mode, 'now');
    assert.equal(normalizeWake({ text: 'x', mode: 'next-heartbeat' }).mode, 'next-heartbeat');
    for (const mode of ['later', 'NOW', 'Next-Heartbeat', 'next_heartbeat', '', ' now', 1, true, {}]) {
      rejects400(() => normalizeWake({ text: 'x', mode }), /mode must be "now" or "next-heartbeat"/);
    }
  });

  it('ignores unknown keys', () => {
    assert.deepEqual(normalizeWake({ text: 'x', extra: { deep: 1 } }), {
      text: 'x',
      mode: 'now',
      sessionKey: undefined,
      agentId: undefined,
    });
  });

  it('a sessionKey, when sent, must name a session: blank is 400 (as in OpenClaw), not ignored; agentId is read', () => {
    for (const sessionKey of ['', '   '])
      rejects400(() => normalizeWake({ text: 'x', sessionKey }), /sessionKey must be a non-empty string/);
    assert.deepEqual(normalizeWake({ text: 'x', sessionKey: ' hook:w ', agentId: 'ops' }), {
      text: 'x',
      mode: 'now',
      sessionKey: 'hook:w',
      agentId: 'ops',
    });
  });
});

describe('normalizeAgent', () => {
  it('requires message: a non-blank string, trimmed', () => {
    assert.equal(normalizeAgent({ message: '  Summarise this  ' }).message, 'Summarise this');
    for (const message of [undefined, null, '', '  ', 7, false, ['m']]) {
      rejects400(() => normalizeAgent(message === undefined ? {} : { message }), /message required/);
    }
    // `text` is the wake field: it does not stand in for `message`
    rejects400(() => normalizeAgent({ text: 'hello' }), /message required/);
  });

  it('fills the defaults', () => {
    assert.deepEqual(normalizeAgent({ message: 'm' }), {
      message: 'm',
      name: 'Hook',
      agentId: undefined,
      sessionKey: undefined,
      sessionMode: 'isolated',
      wakeMode: 'now',
      deliver: true,
      channel: 'last',
      to: undefined,
      accountId: undefined,
      model: undefined,
      thinking: undefined,
      timeoutSeconds: undefined,
    });
  });

  it('keeps every given field', () => {
    assert.deepEqual(
      normalizeAgent({
        message: 'm',
        name: ' GitHub ',
        agentId: 'ops',
        sessionKey: 'hook:gh:1',
        sessionMode: 'persistent',
        wakeMode: 'next-heartbeat',
        deliver: false,
        channel: 'telegram',
        to: '123',
        accountId: ' Alerts ',
        model: ' echo/echo ',
        thinking: 'high',
        timeoutSeconds: 30,
      }),
      {
        message: 'm',
        name: 'GitHub',
        agentId: 'ops',
        sessionKey: 'hook:gh:1',
        sessionMode: 'persistent',
        wakeMode: 'next-heartbeat',
        deliver: false,
        channel: 'telegram',
        to: '123',
        accountId: 'Alerts',
        model: 'echo/echo',
        thinking: 'high',
        timeoutSeconds: 30,
      },
    );
  });

  it('takes wakeMode now (default) or next-heartbeat; anything else is 400', () => {
    assert.equal(normalizeAgent({ message: 'm', wakeMode: 'next-heartbeat' }).wakeMode, 'next-heartbeat');
    for (const wakeMode of ['soon', 'NOW', '', 0])
      rejects400(() => normalizeAgent({ message: 'm', wakeMode }), /wakeMode/);
  });

  it('deliver is a boolean, true by default; no coercion of strings or numbers', () => {
    assert.equal(normalizeAgent({ message: 'm' }).deliver, true);
    assert.equal(normalizeAgent({ message: 'm', deliver: true }).deliver, true);
    assert.equal(normalizeAgent({ message: 'm', deliver: false }).deliver, false);
    for (const deliver of ['false', 'true', 0, 1, 'no'])
      rejects400(() => normalizeAgent({ message: 'm', deliver }), /deliver/);
  });

  it('channel defaults to last; a blank channel is last too; non-strings are 400', () => {
    assert.equal(normalizeAgent({ message: 'm' }).channel, 'last');
    assert.equal(normalizeAgent({ message: 'm', channel: '  ' }).channel, 'last');
    assert.equal(normalizeAgent({ message: 'm', channel: ' Slack ' }).channel, 'Slack'); // policy normalises case
    rejects400(() => normalizeAgent({ message: 'm', channel: 5 }), /channel must be a string/);
  });

  it('timeoutSeconds must be a positive number', () => {
    assert.equal(normalizeAgent({ message: 'm', timeoutSeconds: 30 }).timeoutSeconds, 30);
    assert.equal(normalizeAgent({ message: 'm', timeoutSeconds: 0.5 }).timeoutSeconds, 0.5);
    for (const t of [0, -1, -0.5, '30', Infinity, Number.NaN, true, [30]]) {
      rejects400(() => normalizeAgent({ message: 'm', timeoutSeconds: t }), /timeoutSeconds must be a positive number/);
    }
    assert.equal(timeoutSeconds(undefined), undefined);
    assert.equal(timeoutSeconds(null), undefined);
  });

  it('accountId, when given, must be a non-blank string: never dropped, never coerced', () => {
    assert.equal(normalizeAgent({ message: 'm', accountId: null }).accountId, undefined);
    assert.equal(normalizeAgent({ message: 'm', accountId: ' alerts ' }).accountId, 'alerts');
    for (const accountId of ['', '  ', 5, true, {}, ['alerts']])
      rejects400(() => normalizeAgent({ message: 'm', accountId }), /accountId must be a non-empty string/);
  });

  it('model, when given, must be a non-blank string', () => {
    assert.equal(normalizeAgent({ message: 'm', model: null }).model, undefined);
    for (const model of ['', '  ', 5, {}]) rejects400(() => normalizeAgent({ message: 'm', model }), /model/);
  });

  it('string fields refuse other types instead of coercing them', () => {
    for (const key of ['name', 'agentId', 'sessionKey', 'to', 'thinking']) {
      rejects400(() => normalizeAgent({ message: 'm', [key]: 123 }), new RegExp(`${key} must be a string`));
      rejects400(() => normalizeAgent({ message: 'm', [key]: { a: 1 } }), new RegExp(`${key} must be a string`));
    }
    assert.equal(optionalString({ k: '  ' }, 'k'), undefined);
    assert.equal(optionalString({ k: null }, 'k'), undefined);
  });

  it('sessionMode is isolated (default) or persistent', () => {
    assert.equal(sessionMode(undefined), 'isolated');
    assert.equal(sessionMode('persistent'), 'persistent');
    rejects400(() => normalizeAgent({ message: 'm', sessionMode: 'shared' }), /sessionMode/);
  });

  it('parseWakeMode names the key in its message', () => {
    rejects400(() => parseWakeMode('x', 'mode'), /^mode must be/);
    rejects400(() => parseWakeMode('x', 'wakeMode'), /^wakeMode must be/);
  });
});

describe('waitForCompletion', () => {
  it('is a boolean, false when absent (or null); anything else is 400 naming the field, never coerced', () => {
    assert.equal(waitForCompletion({ message: 'm' }), false);
    assert.equal(waitForCompletion({ message: 'm', waitForCompletion: null }), false);
    assert.equal(waitForCompletion({ message: 'm', waitForCompletion: true }), true);
    assert.equal(waitForCompletion({ message: 'm', waitForCompletion: false }), false);
    for (const v of ['true', 1, 0, '', {}, [true]]) {
      rejects400(
        () => waitForCompletion({ message: 'm', waitForCompletion: v }),
        /^waitForCompletion must be true or false$/,
      );
    }
  });

  it('is not part of the agent request (mappings never take it)', () => {
    assert.ok(!('waitForCompletion' in normalizeAgent({ message: 'm', waitForCompletion: true })));
  });
});
