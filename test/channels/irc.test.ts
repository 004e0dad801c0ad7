import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ircSchema } from '../../src/config/schema/channels.js';
import {
  createIrcChannel,
  IRC_LINE_BYTES,
  parseIrcLine,
  privmsgTextBudget,
  splitIrcText,
  type IrcChannel,
  type IrcChannelOptions,
} from '../../src/channels/irc.js';
import type { ChannelContext, OutboundMessage } from '../../src/channels/types.js';
import { freePort, IrcObserver, ngircdSkipReason, OPENSSL, startNgircd, type NgircdServer } from '../support/ngircd.js';

// ----------------------------------------------------------------------------------------------------------------
// helpers

interface LogEntry {
  level: string;
  obj: object;
  msg: string | undefined;
}
function testContext(): ChannelContext & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void entries.push({ level, obj, msg });
  return { configDir: process.cwd(), logger: { info: at('info'), warn: at('warn'), error: at('error') }, entries };
}

let seq = 0;
function message(to: string, text: string): OutboundMessage {
  seq++;
  return {
    deliveryId: `dlv-${seq}`,
    channel: 'irc',
    to,
    text,
    runId: `run-${seq}`,
    sessionKey: 'hook:test',
    agentId: 'main',
    hookName: 'test',
    createdAt: new Date().toISOString(),
  };
}

function ircChannel(config: Record<string, unknown>, options: IrcChannelOptions = {}, ctx = testContext()): IrcChannel {
  return createIrcChannel(ircSchema.parse({ tls: false, floodIntervalMs: 0, timeoutMs: 10_000, ...config }), ctx, { reconnectBaseMs: 200, ...options });
}

// ----------------------------------------------------------------------------------------------------------------
// wire format (no server)

describe('irc wire format', () => {
  it('parses prefix, command, middle and trailing params, and skips tags', () => {
    assert.deepEqual(parseIrcLine(':irc.x 001 bot :Welcome to IRC'), { prefix: 'irc.x', command: '001', params: ['bot', 'Welcome to IRC'] });
    assert.deepEqual(parseIrcLine('PING :abc def'), { command: 'PING', params: ['abc def'] });
    assert.deepEqual(parseIrcLine('@time=2024;msgid=1 :n!u@h privmsg #c :hi :)'), { prefix: 'n!u@h', command: 'PRIVMSG', params: ['#c', 'hi :)'] });
    assert.deepEqual(parseIrcLine(':s CAP * LS * :multi-prefix sasl'), { prefix: 's', command: 'CAP', params: ['*', 'LS', '*', 'multi-prefix sasl'] });
    assert.deepEqual(parseIrcLine(':s 005 me CHANTYPES=# :are supported'), { prefix: 's', command: '005', params: ['me', 'CHANTYPES=#', 'are supported'] });
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
    for (const p of parts) assert.equal((p.match(/👩🏽‍💻/gu) ?? []).join('').length + p.replace(/👩🏽‍💻/gu, '').length, p.length);
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

// ----------------------------------------------------------------------------------------------------------------
// failures that need no real server

describe('irc errors without a server', () => {
  it('rejects a recipient that is not one IRC parameter, permanently and without connecting', async () => {
    const ch = ircChannel({ host: '127.0.0.1', port: 1, nick: 'hookgate' });
    for (const to of ['two words', '#a,#b', ':x', '', 'a\r\nQUIT']) {
      const r = await ch.send(message(to, 'hi'));
      assert.equal(r.ok, false);
      assert.ok(!r.ok && r.retryable === false, `to=${JSON.stringify(to)}`);
    }
    assert.equal(ch.connected, false);
    await ch.close();
  });

  it('reports a refused connection as retryable', async () => {
    const port = await freePort();
    const ch = ircChannel({ host: '127.0.0.1', port, nick: 'hookgate' });
    const r = await ch.send(message('#x', 'hi'));
    assert.ok(!r.ok && r.retryable, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /ECONNREFUSED/);
    await ch.close();
  });
});

// ----------------------------------------------------------------------------------------------------------------
// A protocol-faithful stand-in for what ngircd cannot do: SASL (ngircd has no SASL) and a server that never PONGs.

interface FakeIrcd {
  port: number;
  received: string[];
  close(): Promise<void>;
}

/** Registration per RFC 2812 + IRCv3 CAP 302 / SASL 3.1, answered by `onLine` for everything else. */
async function startFakeIrcd(opts: { saslAccept?: (payload: string) => boolean; answerPing?: boolean }): Promise<FakeIrcd> {
  const received: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.setEncoding('utf8');
    let buf = '';
    let nick = '*';
    let capNegotiating = false;
    let registered = false;
    const w = (l: string) => sock.write(`:fake.irc ${l}\r\n`);
    const tryWelcome = () => {
      if (!registered && !capNegotiating && nick !== '*') {
        registered = true;
        w(`001 ${nick} :Welcome ${nick}!u@h`);
        w(`005 ${nick} CHANTYPES=# CASEMAPPING=rfc1459 :are supported`);
      }
    };
    sock.on('data', (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        received.push(line);
        const m = parseIrcLine(line);
        if (!m) continue;
        switch (m.command) {
          case 'CAP':
            if (m.params[0] === 'LS') {
              capNegotiating = true;
              // CAP 302 multi-line LS: the first line marked with "*".
              w('CAP * LS * :multi-prefix away-notify');
              w('CAP * LS :sasl=PLAIN,EXTERNAL server-time');
            } else if (m.params[0] === 'REQ') w(`CAP * ACK :${m.params[1]}`);
            else if (m.params[0] === 'END') {
              capNegotiating = false;
              tryWelcome();
            }
            break;
          case 'AUTHENTICATE':
            if (m.params[0] === 'PLAIN') sock.write('AUTHENTICATE +\r\n');
            else if (opts.saslAccept?.(Buffer.from(m.params[0] ?? '', 'base64').toString('utf8'))) {
              w(`900 ${nick} ${nick}!u@h acct :You are now logged in as acct`);
              w(`903 ${nick} :SASL authentication successful`);
            } else w(`904 ${nick} :SASL authentication failed`);
            break;
          case 'NICK':
            nick = m.params[0] ?? '*';
            tryWelcome();
            break;
          case 'PING':
            if (opts.answerPing !== false) w(`PONG fake.irc :${m.params[0] ?? ''}`);
            break;
          case 'JOIN':
            sock.write(`:${nick}!u@h JOIN ${m.params[0]}\r\n`);
            break;
          case 'QUIT':
            sock.end('ERROR :Closing link\r\n');
            break;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('irc against a stand-in server (SASL, confirmation timeout)', () => {
  it('authenticates with SASL PLAIN before registration completes', async () => {
    let payload = '';
    const ircd = await startFakeIrcd({ saslAccept: (p) => ((payload = p), p === 'acct\0acct\0s3cret pass') });
    const ctx = testContext();
    const ch = ircChannel({ host: '127.0.0.1', port: ircd.port, nick: 'hookgate', saslUsername: 'acct', saslPassword: 's3cret pass' }, {}, ctx);
    const r = await ch.send(message('#ops', 'hello'));
    assert.deepEqual(r, { ok: true });
    assert.equal(payload, 'acct\0acct\0s3cret pass');
    const order = ircd.received.map((l) => l.split(' ')[0]);
    // CAP LS first, CAP END only after AUTHENTICATE, and nothing sent to a channel before that.
    assert.equal(order[0], 'CAP');
    assert.ok(order.indexOf('AUTHENTICATE') < ircd.received.indexOf('CAP END'));
    assert.ok(ircd.received.indexOf('CAP END') < ircd.received.findIndex((l) => l.startsWith('JOIN')));
    assert.ok(ircd.received.includes('PRIVMSG #ops :hello'));
    assert.ok(!JSON.stringify(ctx.entries).includes('s3cret'));
    await ch.close();
    await ircd.close();
  });

  it('fails permanently when SASL is rejected, without the password in the error', async () => {
    const ircd = await startFakeIrcd({ saslAccept: () => false });
    const ch = ircChannel({ host: '127.0.0.1', port: ircd.port, nick: 'hookgate', saslPassword: 'wrong-pass' });
    const r = await ch.send(message('#ops', 'hello'));
    assert.ok(!r.ok && r.retryable === false, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /SASL.*904/);
    assert.ok(!JSON.stringify(r).includes('wrong-pass'));
    assert.ok(!ircd.received.some((l) => l.startsWith('PRIVMSG')));
    await ch.close();
    await ircd.close();
  });

  it('fails retryably when the server never confirms (no PONG), and drops that connection', async () => {
    const ircd = await startFakeIrcd({ answerPing: false });
    const ch = ircChannel({ host: '127.0.0.1', port: ircd.port, nick: 'hookgate', timeoutMs: 500 });
    const r = await ch.send(message('somenick', 'hello'));
    assert.ok(!r.ok && r.retryable, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /confirm/);
    assert.ok(ircd.received.includes('PRIVMSG somenick :hello'));
    assert.equal(ch.connected, false);
    await ch.close();
    await ircd.close();
  });

  it('probes a silent server with PING, drops it when it stays silent, and reconnects', async () => {
    const opts = { answerPing: true };
    const ircd = await startFakeIrcd(opts);
    const ctx = testContext();
    const ch = ircChannel({ host: '127.0.0.1', port: ircd.port, nick: 'hookgate', timeoutMs: 300 }, { keepaliveIdleMs: 200, reconnectBaseMs: 100 }, ctx);
    assert.deepEqual(await ch.send(message('somenick', 'hello')), { ok: true });
    opts.answerPing = false;
    const deadline = Date.now() + 5000;
    while (!ctx.entries.some((e) => e.msg?.includes('reconnecting')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(ircd.received.some((l) => l.startsWith('PING :keepalive-')));
    assert.ok(ctx.entries.some((e) => e.level === 'warn' && JSON.stringify(e.obj).includes('stopped answering')));
    opts.answerPing = true;
    while (!ch.connected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(ch.connected, true);
    assert.equal(ircd.received.filter((l) => l.startsWith('USER ')).length, 2, 'registered twice');
    await ch.close();
    await ircd.close();
  });
});

// ----------------------------------------------------------------------------------------------------------------
// Against a real ngIRCd

const skip = ngircdSkipReason();

describe('irc against ngircd', { skip }, () => {
  let server: NgircdServer;
  let observer: IrcObserver;
  let ch: IrcChannel;
  const ctx = testContext();

  before(async () => {
    server = await startNgircd({ channels: { '#keyed': '+k sekrit' } });
    observer = await IrcObserver.connect(server.port, 'watcher');
    await observer.join('#hookgate');
    ch = ircChannel({ host: server.host, port: server.port, nick: 'hookgate', floodBurst: 10, floodIntervalMs: 100 }, {}, ctx);
  });
  after(async () => {
    await ch?.close();
    observer?.close();
    await server?.dispose();
  });

  it('joins the channel and sends one PRIVMSG per line, in order', async () => {
    const r = await ch.send(message('#hookgate', 'line one\nline two\n\nline three'));
    assert.deepEqual(r, { ok: true });
    const got = await observer.waitForPrivmsgs('#hookgate', 3);
    assert.deepEqual(
      got.map((m) => [m.from, m.text]),
      [
        ['hookgate', 'line one'],
        ['hookgate', 'line two'],
        ['hookgate', 'line three'],
      ],
    );
    assert.equal(ch.connected, true);
  });

  it('splits a long line by bytes so every relayed line fits 512 bytes, losing nothing', async () => {
    const before = observer.privmsgs('#hookgate').length;
    const text = 'ä'.repeat(250) + '🙂'.repeat(150) + 'z'.repeat(450);
    const r = await ch.send(message('#hookgate', text));
    assert.deepEqual(r, { ok: true });
    // At most ~406 bytes of text fit per line here: 500 + 600 + 450 bytes need 4 lines.
    await observer.waitFor(() => observer.privmsgs('#hookgate').slice(before).map((m) => m.text).join('') === text);
    const parts = observer.privmsgs('#hookgate').slice(before);
    assert.ok(parts.length >= 4, `${parts.length} lines`);
    for (const p of parts) assert.ok(Buffer.byteLength(p.raw) + 2 <= IRC_LINE_BYTES, `relayed ${Buffer.byteLength(p.raw) + 2} bytes`);
  });

  it('delivers to a nick', async () => {
    const r = await ch.send(message('watcher', 'psst'));
    assert.deepEqual(r, { ok: true });
    const m = await observer.waitForPrivmsgs('watcher', 1);
    assert.deepEqual([m[0]?.from, m[0]?.text], ['hookgate', 'psst']);
  });

  it('fails permanently for an unknown nick (401) and stays usable', async () => {
    const r = await ch.send(message('nobody-here', 'hello?'));
    assert.ok(!r.ok && r.retryable === false, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /no such nick.*401/);
    assert.ok(!(!r.ok && r.error.includes('hello?')), 'message text must not be in the error');
    const ok = await ch.send(message('#hookgate', 'still here'));
    assert.deepEqual(ok, { ok: true });
  });

  it('fails permanently when the channel does not let it speak (404)', async () => {
    const mod = await IrcObserver.connect(server.port, 'moderator');
    await mod.join('#quiet'); // first in: channel operator
    assert.deepEqual(await ch.send(message('#quiet', 'before +m')), { ok: true });
    mod.send('MODE #quiet +m');
    await mod.waitFor((l) => l.command === 'MODE' && l.params[1] === '+m');
    const r = await ch.send(message('#quiet', 'after +m'));
    assert.ok(!r.ok && r.retryable === false, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /cannot send to the channel.*404/);
    mod.close();
  });

  it('needs the channel key for a +k channel (475 without it)', async () => {
    const r = await ch.send(message('#keyed', 'locked out'));
    assert.ok(!r.ok && r.retryable === false, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /channel key.*475/);

    const keyObserver = await IrcObserver.connect(server.port, 'keywatch');
    keyObserver.send('JOIN #keyed sekrit');
    await keyObserver.waitFor((l) => l.command === 'JOIN' && l.params[0] === '#keyed');
    const keyed = ircChannel({ host: server.host, port: server.port, nick: 'keybot', channelKeys: { '#keyed': 'sekrit' } });
    assert.deepEqual(await keyed.send(message('#keyed', 'let in')), { ok: true });
    await keyObserver.waitForPrivmsgs('#keyed', 1);
    await keyed.close();
    keyObserver.close();
  });

  it('takes an alternative nick when its nick is in use (433)', async () => {
    const squatter = await IrcObserver.connect(server.port, 'dupbot');
    const dup = ircChannel({ host: server.host, port: server.port, nick: 'dupbot' });
    assert.deepEqual(await dup.send(message('#hookgate', 'from the alternative')), { ok: true });
    const m = await observer.waitFor((l) => l.command === 'PRIVMSG' && l.params[1] === 'from the alternative');
    assert.equal(m.prefix?.split('!')[0], 'dupbot_');
    await dup.close();
    squatter.close();
  });

  it('spaces lines out after the burst (flood control)', async () => {
    const slow = ircChannel({ host: server.host, port: server.port, nick: 'slowbot', floodBurst: 2, floodIntervalMs: 500 });
    assert.deepEqual(await slow.send(message('watcher', 'warm-up')), { ok: true }); // connect (the JOIN-free path)
    await new Promise((r) => setTimeout(r, 1000)); // refill the bucket
    const started = Date.now();
    assert.deepEqual(await slow.send(message('watcher', 'f1\nf2\nf3\nf4\nf5')), { ok: true });
    // 2 at once, then 3 more at 500 ms intervals.
    assert.ok(Date.now() - started >= 1400, `took ${Date.now() - started} ms`);
    await slow.close();
  });

  it('fails permanently when SASL is required but the server has none (ngircd)', async () => {
    const sasl = ircChannel({ host: server.host, port: server.port, nick: 'saslbot', saslPassword: 'pw' });
    const r = await sasl.send(message('#hookgate', 'x'));
    assert.ok(!r.ok && r.retryable === false, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /SASL/);
    await sasl.close();
  });

  it('sends QUIT on close()', async () => {
    const q = ircChannel({ host: server.host, port: server.port, nick: 'quitbot' });
    assert.deepEqual(await q.send(message('#hookgate', 'bye soon')), { ok: true });
    await q.close();
    const quit = await observer.waitFor((l) => l.command === 'QUIT' && l.prefix?.split('!')[0] === 'quitbot');
    assert.match(quit.params[0] ?? '', /hookgate shutting down/);
    const after = await q.send(message('#hookgate', 'too late'));
    assert.ok(!after.ok && after.retryable);
  });

  it('logs no message text', () => {
    const logged = JSON.stringify(ctx.entries);
    assert.ok(!logged.includes('line one') && !logged.includes('psst'));
  });
});

describe('irc against ngircd: server password', { skip }, () => {
  let server: NgircdServer;
  before(async () => {
    server = await startNgircd({ password: 'letmein' });
  });
  after(async () => server?.dispose());

  it('registers with the right PASS', async () => {
    const o = await IrcObserver.connect(server.port, 'passwatch', 'letmein');
    const ch = ircChannel({ host: server.host, port: server.port, nick: 'passbot', password: 'letmein' });
    assert.deepEqual(await ch.send(message('passwatch', 'with the password')), { ok: true });
    assert.equal((await o.waitForPrivmsgs('passwatch', 1))[0]?.text, 'with the password');
    await ch.close();
    o.close();
  });

  it('fails permanently with a wrong PASS, without the password in the error', async () => {
    const ch = ircChannel({ host: server.host, port: server.port, nick: 'passbot2', password: 'nope-wrong' });
    const r = await ch.send(message('#x', 'hi'));
    assert.ok(!r.ok && r.retryable === false, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /password/);
    assert.ok(!JSON.stringify(r).includes('nope-wrong'));
    await ch.close();
  });
});

describe('irc against ngircd: reconnect after the server restarts', { skip }, () => {
  let server: NgircdServer;
  before(async () => {
    server = await startNgircd();
  });
  after(async () => server?.dispose());

  it('fails retryably while the server is down, then reconnects and delivers', async () => {
    const ctx = testContext();
    const ch = ircChannel({ host: server.host, port: server.port, nick: 'phoenix', timeoutMs: 3000 }, { reconnectBaseMs: 200, reconnectMaxMs: 1000 }, ctx);
    let o = await IrcObserver.connect(server.port, 'witness');
    await o.join('#restart');
    assert.deepEqual(await ch.send(message('#restart', 'before the restart')), { ok: true });
    await o.waitForPrivmsgs('#restart', 1);
    o.close();

    await server.stop();
    const down = await ch.send(message('#restart', 'while down'));
    assert.ok(!down.ok && down.retryable, JSON.stringify(down));

    await server.start();
    // The background reconnect brings the connection back without any delivery asking for it.
    const deadline = Date.now() + 10_000;
    while (!ch.connected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.equal(ch.connected, true, 'reconnected in the background');

    o = await IrcObserver.connect(server.port, 'witness');
    await o.join('#restart');
    // The channel state was lost with the server: it must join again.
    assert.deepEqual(await ch.send(message('#restart', 'after the restart\nsecond line')), { ok: true });
    const got = await o.waitForPrivmsgs('#restart', 2);
    assert.deepEqual(
      got.map((m) => m.text),
      ['after the restart', 'second line'],
    );
    assert.ok(ctx.entries.some((e) => e.level === 'warn' && e.msg?.includes('reconnecting')));
    await ch.close();
    o.close();
  });
});

describe('irc against ngircd: TLS', { skip: skip ?? (OPENSSL ? undefined : 'openssl is not installed: cannot make a certificate') }, () => {
  let server: NgircdServer;
  before(async () => {
    server = await startNgircd({ tls: true });
  });
  after(async () => server?.dispose());

  it('delivers over TLS to a self-signed server with tlsInsecure', async () => {
    const o = await IrcObserver.connect(server.port, 'tlswatch');
    await o.join('#secure');
    const ch = ircChannel({ host: server.host, port: server.tlsPort, tls: true, tlsInsecure: true, nick: 'tlsbot' });
    assert.deepEqual(await ch.send(message('#secure', 'over TLS')), { ok: true });
    const got = await o.waitForPrivmsgs('#secure', 1);
    assert.equal(got[0]?.text, 'over TLS');
    await ch.close();
    o.close();
  });

  it('refuses a self-signed certificate without tlsInsecure, permanently', async () => {
    const ch = ircChannel({ host: server.host, port: server.tlsPort, tls: true, nick: 'strictbot' });
    const r = await ch.send(message('#secure', 'x'));
    assert.ok(!r.ok && r.retryable === false, JSON.stringify(r));
    assert.match(!r.ok ? r.error : '', /certificate.*tlsInsecure/);
    await ch.close();
  });
});
