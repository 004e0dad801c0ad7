import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IRC_LINE_BYTES, parseIrcLine, privmsgTextBudget, splitIrcText } from '../../../src/channels/irc.js';
import { ircChannel } from './kit.js';

// ----------------------------------------------------------------------------------------------------------------
// wire format (no server)

describe('irc wire format', () => {
  it('parses prefix, command, middle and trailing params, and skips tags', () => {
    assert.deepEqual(parseIrcLine(':irc.x 001 bot :Welcome to IRC'), {
      prefix: 'irc.x',
      command: '001',
      params: ['bot', 'Welcome to IRC'],
    });
    assert.deepEqual(parseIrcLine('PING :abc def'), { command: 'PING', params: ['abc def'] });
    assert.deepEqual(parseIrcLine('@time=2024;msgid=1 :n!u@h privmsg #c :hi :)'), {
      prefix: 'n!u@h',
      command: 'PRIVMSG',
      params: ['#c', 'hi :)'],
    });
    assert.deepEqual(parseIrcLine(':s CAP * LS * :multi-prefix sasl'), {
      prefix: 's',
      command: 'CAP',
      params: ['*', 'LS', '*', 'multi-prefix sasl'],
    });
    assert.deepEqual(parseIrcLine(':s 005 me CHANTYPES=# :are supported'), {
      prefix: 's',
      command: '005',
      params: ['me', 'CHANTYPES=#', 'are supported'],
    });
    assert.equal(parseIrcLine(''), undefined);
  });

  it('sends one PRIVMSG text per line and drops blank lines', () => {
    assert.deepEqual(splitIrcText('one\ntwo\r\nthree\rfour\n\n  \nfive', 400), ['one', 'two', 'three', 'four', 'five']);
    assert.deepEqual(splitIrcText('a\0b', 400), ['ab']);
    assert.deepEqual(splitIrcText('\n\n', 400), []);
  });

  it('splits a long line by UTF-8 bytes, never inside a character or an emoji cluster', () => {
    const text = 'ä'.repeat(300) + '👩🏽‍💻'.repeat(40) + 'x'.repeat(333);
    const parts = splitIrcText(text, 100);
    assert.equal(parts.join(''), text);
    for (const p of parts) assert.ok(Buffer.byteLength(p) <= 100, `${Buffer.byteLength(p)} bytes`);
    assert.ok(!parts.some((p) => p.includes('\uFFFD')));
    // The 15-byte emoji cluster is never cut in two.
    for (const p of parts)
      assert.equal((p.match(/👩🏽‍💻/gu) ?? []).join('').length + p.replace(/👩🏽‍💻/gu, '').length, p.length);
  });

  it('cuts at a space in the second half of the budget, dropping that space', () => {
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    const parts = splitIrcText(words, 50);
    assert.equal(parts.join(' '), words);
    for (const p of parts) {
      assert.ok(Buffer.byteLength(p) <= 50);
      assert.ok(!p.startsWith(' ') && !p.endsWith(' '));
    }
  });

  it('keeps the relayed line within 512 bytes for the worst-case host, and maxTextLength within the budget', () => {
    const nick = 'hookgate';
    const target = '#hookgate';
    const budget = privmsgTextBudget(nick, 'hookgate', target);
    const relayed = `:${nick}!~hookgate@${'h'.repeat(63)} PRIVMSG ${target} :${'x'.repeat(budget)}\r\n`;
    assert.ok(Buffer.byteLength(relayed) <= IRC_LINE_BYTES);
    const ch = ircChannel({ host: '127.0.0.1', nick });
    assert.ok(ch.maxTextLength > 300 && ch.maxTextLength <= privmsgTextBudget(`${nick}__`, 'hookgate', 'x'.repeat(50)));
  });
});
