import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogChannel, humanLine, LOG_MAX_TEXT_LENGTH } from '../../src/channels/log.js';
import type { ChannelContext, OutboundMessage } from '../../src/channels/types.js';
import { deliveryRecord } from '../../src/channels/webhook.js';
import { tempDir } from '../support/temp-dir.js';

const dir = tempDir('hookgate-log-');
const ctx: ChannelContext = { configDir: dir, logger: { info() {}, warn() {}, error() {} } };

function message(i: number, text = `reply ${i}`): OutboundMessage {
  return {
    deliveryId: `d${i}`,
    channel: 'log',
    to: 'stdout',
    text,
    runId: i % 2 ? `run-${i}` : null,
    sessionKey: 'hook:x',
    agentId: 'main',
    hookName: i % 2 ? 'X' : null,
    createdAt: new Date(1_700_000_000_000 + i).toISOString(),
  };
}

/** A stdout stand-in that keeps each write; `isTTY` as a terminal (true), a pipe (false) or a plain stream has it. */
function capture(isTTY?: boolean): { out: PassThrough & { isTTY?: boolean }; chunks: string[] } {
  const out = Object.assign(new PassThrough(), isTTY === undefined ? {} : { isTTY });
  const chunks: string[] = [];
  out.on('data', (c: Buffer) => chunks.push(c.toString()));
  return { out, chunks };
}

describe('log channel', () => {
  it('writes one JSON line per delivery to stdout, the same object as the webhook body', async () => {
    const { out, chunks } = capture();
    const ch = createLogChannel(undefined, ctx, { stdout: out });
    assert.equal(ch.id, 'log');
    assert.equal(ch.maxTextLength, LOG_MAX_TEXT_LENGTH);
    const m = message(1, 'two\nlines "quoted"');
    assert.deepEqual(await ch.send(m), { ok: true });
    assert.equal(chunks.length, 1, 'one write per message');
    assert.ok(chunks[0]?.endsWith('\n'));
    assert.equal(chunks[0]?.split('\n').length, 2, 'newlines in the text are escaped, the line stays one line');
    assert.deepEqual(JSON.parse(chunks[0] ?? ''), deliveryRecord(m));
    await ch.close?.();
  });

  it('on a terminal, prints a reply for a person: time, channel, recipient, hook, then the text indented; escape sequences removed', async () => {
    const { out, chunks } = capture(true);
    const ch = createLogChannel(undefined, ctx, { stdout: out });
    const m = {
      ...message(1, 'Build failed.\r\nSee \u001b[31mred\u001b[0m\u0007 log\rfake line\n\n'),
      to: 'ops',
      hookName: 'GitHub CI',
    };
    assert.deepEqual(await ch.send(m), { ok: true });
    assert.deepEqual(await ch.send({ ...message(2, 'HEARTBEAT summary'), hookName: null }), { ok: true });
    const time = new Date(m.createdAt).toTimeString().slice(0, 8);
    assert.match(time, /^\d\d:\d\d:\d\d$/);
    assert.equal(chunks.length, 2, 'one write per message');
    assert.equal(chunks[0], `${time} log → ops · hook GitHub CI\n  Build failed.\n  See [31mred[0m log\n  fake line\n`);
    assert.equal(chunks[1], `${time} log → stdout · heartbeat\n  HEARTBEAT summary\n`);
    await ch.close?.();
  });

  it('not on a terminal (piped stdout, isTTY false or absent) and to a file: JSON lines, whatever stdout is', async () => {
    const { out: piped, chunks } = capture(false);
    const ch = createLogChannel(undefined, ctx, { stdout: piped });
    await ch.send(message(1));
    assert.deepEqual(JSON.parse(chunks[0] ?? ''), deliveryRecord(message(1)));

    const toFile = createLogChannel({ path: 'data/tty-but-file.jsonl' }, ctx, { stdout: capture(true).out });
    await toFile.send(message(2));
    await toFile.close?.();
    assert.deepEqual(
      JSON.parse(readFileSync(join(dir, 'data/tty-but-file.jsonl'), 'utf8')),
      deliveryRecord(message(2)),
    );
    await ch.close?.();
  });

  it('appends to a file relative to the config dir, creating the directory, private to the owner', async () => {
    const ch = createLogChannel({ path: 'data/deliveries/out.jsonl' }, ctx);
    assert.deepEqual(await ch.send(message(1)), { ok: true });
    assert.deepEqual(await ch.send(message(2)), { ok: true });
    await ch.close?.();
    const file = join(dir, 'data/deliveries/out.jsonl');
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { text: string }).text),
      ['reply 1', 'reply 2'],
    );
    assert.equal(statSync(file).mode & 0o777, 0o600);

    // A new channel (a restart) appends rather than truncating.
    const again = createLogChannel({ path: 'data/deliveries/out.jsonl' }, ctx);
    await again.send(message(3));
    await again.close?.();
    assert.equal(readFileSync(file, 'utf8').trimEnd().split('\n').length, 3);
  });

  it('never interleaves lines under concurrent sends from two channels on the same file', async () => {
    const a = createLogChannel({ path: 'concurrent.jsonl' }, ctx);
    const b = createLogChannel({ path: 'concurrent.jsonl' }, ctx);
    const big = 'x'.repeat(100_000);
    const sends = Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).send(message(i, `${i}:${big}`)));
    const results = await Promise.all(sends);
    assert.ok(results.every((r) => r.ok));
    await a.close?.();
    await b.close?.();
    const lines = readFileSync(join(dir, 'concurrent.jsonl'), 'utf8').trimEnd().split('\n');
    assert.equal(lines.length, 60);
    const seen = new Set(lines.map((l) => (JSON.parse(l) as { text: string }).text.split(':')[0]));
    assert.equal(seen.size, 60);
  });

  it('fails permanently when the path cannot be a file, naming no path or text', async () => {
    writeFileSync(join(dir, 'a-file'), '');
    const ch = createLogChannel({ path: 'a-file/sub/out.jsonl' }, ctx);
    const r = await ch.send(message(1, 'secret reply'));
    assert.ok(!r.ok && r.retryable === false, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /ENOTDIR/);
    assert.ok(!(!r.ok && r.error.includes('secret reply')));
    await ch.close?.();
  });
});

describe('log channel on a terminal', () => {
  const message = (to: string): OutboundMessage => ({
    deliveryId: 'd1',
    channel: 'log',
    to,
    text: 'the reply\non two lines',
    runId: 'r1',
    sessionKey: 'hook:x',
    agentId: 'main',
    hookName: 'CI',
    createdAt: new Date().toISOString(),
  });

  it('a header (recipient only when there is one), then the reply indented', () => {
    assert.match(humanLine(message('')), /^\d\d:\d\d:\d\d log · hook CI\n {2}the reply\n {2}on two lines\n$/);
    assert.match(humanLine(message('ops')), /^\d\d:\d\d:\d\d log → ops · hook CI\n/);
  });
});
