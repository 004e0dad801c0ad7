import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { parseIrcLine } from '../../../src/channels/irc.js';
import { freePort } from '../../support/ngircd.js';
import { ircChannel, message, testContext } from './kit.js';

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
async function startFakeIrcd(opts: {
  saslAccept?: (payload: string) => boolean;
  answerPing?: boolean;
}): Promise<FakeIrcd> {
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
    const ch = ircChannel(
      { host: '127.0.0.1', port: ircd.port, nick: 'hookgate', saslUsername: 'acct', saslPassword: 's3cret pass' },
      {},
      ctx,
    );
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
    const ch = ircChannel(
      { host: '127.0.0.1', port: ircd.port, nick: 'hookgate', timeoutMs: 300 },
      { keepaliveIdleMs: 200, reconnectBaseMs: 100 },
      ctx,
    );
    assert.deepEqual(await ch.send(message('somenick', 'hello')), { ok: true });
    opts.answerPing = false;
    const deadline = Date.now() + 5000;
    while (!ctx.entries.some((e) => e.msg?.includes('reconnecting')) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
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
