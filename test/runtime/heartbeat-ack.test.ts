import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_ACK_MAX_CHARS, isHeartbeatAck, stripHeartbeatToken } from '../../src/runtime/heartbeat-ack.js';

describe('stripHeartbeatToken', () => {
  const cases: Array<[string, string, boolean]> = [
    ['HEARTBEAT_OK', '', true],
    ['  HEARTBEAT_OK \n', '', true],
    ['**HEARTBEAT_OK**', '', true],
    ['<b>HEARTBEAT_OK</b>', '', true],
    ['<p><strong>HEARTBEAT_OK</strong></p>', '', true],
    ['`HEARTBEAT_OK`', '', true],
    ['_HEARTBEAT_OK_', '', true],
    ['HEARTBEAT_OK.', '', true],
    ['HEARTBEAT_OK!!', '', true],
    ['HEARTBEAT_OK!?!.', '', true],
    ['**HEARTBEAT_OK.**', '', true],
    ['HEARTBEAT_OK!!!!!', '!', true], // only 4 trailing punctuation characters belong to the token
    ['HEARTBEAT_OK nothing new', 'nothing new', true],
    ['Nothing new. HEARTBEAT_OK', 'Nothing new.', true],
    ['Nothing new. **HEARTBEAT_OK**.', 'Nothing new.', true],
    ['HEARTBEAT_OK all quiet HEARTBEAT_OK', 'all quiet', true],
    ['HEARTBEAT_OKAY', 'HEARTBEAT_OKAY', false],
    ['fooHEARTBEAT_OK', 'fooHEARTBEAT_OK', false],
    ['MY_HEARTBEAT_OK', 'MY_HEARTBEAT_OK', false],
    ['heartbeat_ok', 'heartbeat_ok', false],
    ['Status: HEARTBEAT_OK, all fine', 'Status: HEARTBEAT_OK, all fine', false],
    ['', '', false],
  ];
  for (const [reply, stripped, hadToken] of cases) {
    it(JSON.stringify(reply), () => {
      assert.deepEqual(stripHeartbeatToken(reply), { stripped, hadToken });
    });
  }

  it('stays fast on hostile input', () => {
    const started = Date.now();
    stripHeartbeatToken(`${'*'.repeat(200_000)}HEARTBEAT_OK`);
    stripHeartbeatToken(`HEARTBEAT_OK${'<a '.repeat(100_000)}`);
    stripHeartbeatToken('HEARTBEAT_OK '.repeat(20_000));
    assert.ok(Date.now() - started < 2000);
  });
});

describe('isHeartbeatAck', () => {
  it('the bare token and its decorated forms are acks', () => {
    for (const r of [
      'HEARTBEAT_OK',
      '**HEARTBEAT_OK**',
      '<b>HEARTBEAT_OK</b>',
      '`HEARTBEAT_OK`',
      'HEARTBEAT_OK.',
      'HEARTBEAT_OK!!',
    ]) {
      assert.equal(isHeartbeatAck(r, DEFAULT_ACK_MAX_CHARS), true, r);
      assert.equal(isHeartbeatAck(r, 0), true, r);
    }
  });

  it('an empty reply is an ack (nothing to deliver)', () => {
    assert.equal(isHeartbeatAck('', 0), true);
    assert.equal(isHeartbeatAck('  \n\t', 0), true);
  });

  it('a short remark next to the token is an ack within ackMaxChars', () => {
    assert.equal(isHeartbeatAck('All quiet. HEARTBEAT_OK', 300), true);
    assert.equal(isHeartbeatAck('HEARTBEAT_OK — all quiet', 300), true);
  });

  it('ackMaxChars 0 allows no other text', () => {
    assert.equal(isHeartbeatAck('All quiet. HEARTBEAT_OK', 0), false);
    assert.equal(isHeartbeatAck('HEARTBEAT_OK!!!!!', 0), false);
  });

  it('the boundary is inclusive and counts code points', () => {
    assert.equal(isHeartbeatAck(`${'x'.repeat(10)} HEARTBEAT_OK`, 10), true);
    assert.equal(isHeartbeatAck(`${'x'.repeat(11)} HEARTBEAT_OK`, 10), false);
    assert.equal(isHeartbeatAck(`${'😀'.repeat(10)} HEARTBEAT_OK`, 10), true); // 20 UTF-16 units, 10 characters
  });

  it('a long reply with the token at its end is not an ack', () => {
    assert.equal(isHeartbeatAck(`${'Server disk is 95% full. '.repeat(20)}HEARTBEAT_OK`, 300), false);
  });

  it('a long reply that merely mentions HEARTBEAT_OK in the middle is not an ack', () => {
    const reply = `I would normally reply HEARTBEAT_OK, but your build failed: ${'details '.repeat(60)}`;
    assert.equal(isHeartbeatAck(reply, 300), false);
    assert.equal(isHeartbeatAck('Reply HEARTBEAT_OK please', 10_000), false);
  });

  it('a reply without the token is never an ack', () => {
    assert.equal(isHeartbeatAck('ok', 300), false);
  });

  it('treats a bogus ackMaxChars as 0 and Infinity as unlimited', () => {
    assert.equal(isHeartbeatAck('x HEARTBEAT_OK', Number.NaN), false);
    assert.equal(isHeartbeatAck('x HEARTBEAT_OK', -5), false);
    assert.equal(isHeartbeatAck(`${'x'.repeat(10_000)} HEARTBEAT_OK`, Infinity), true);
  });
});
