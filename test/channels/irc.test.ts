import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkIrcRecipient, IRC_LINE_BYTES, type IrcChannel } from '../../src/channels/irc.js';
import { IrcObserver, ngircdSkipReason, OPENSSL, startNgircd, type NgircdServer } from '../support/ngircd.js';
import { ircChannel, message, testContext } from './irc/kit.js';

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
    ch = ircChannel(
      { host: server.host, port: server.port, nick: 'hookgate', floodBurst: 10, floodIntervalMs: 100 },
      {},
      ctx,
    );
  });
  after(async () => {
    await ch?.close();
    observer?.close();
    await server?.dispose();
  });

  it('check (hookgate doctor): connects, registers and QUITs, leaving no connection open', async () => {
    const probe = ircChannel({ host: server.host, port: server.port, nick: 'hgdoctor' }, {}, ctx);
    const r = await probe.check(AbortSignal.timeout(10_000));
    assert.deepEqual(r, { status: 'ok', detail: `registered on ${server.host}:${server.port} as hgdoctor` });
    assert.equal(probe.connected, false);
    await probe.close();
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
    await observer.waitFor(
      () =>
        observer
          .privmsgs('#hookgate')
          .slice(before)
          .map((m) => m.text)
          .join('') === text,
    );
    const parts = observer.privmsgs('#hookgate').slice(before);
    assert.ok(parts.length >= 4, `${parts.length} lines`);
    for (const p of parts)
      assert.ok(Buffer.byteLength(p.raw) + 2 <= IRC_LINE_BYTES, `relayed ${Buffer.byteLength(p.raw) + 2} bytes`);
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
    const keyed = ircChannel({
      host: server.host,
      port: server.port,
      nick: 'keybot',
      channelKeys: { '#keyed': 'sekrit' },
    });
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
    const slow = ircChannel({
      host: server.host,
      port: server.port,
      nick: 'slowbot',
      floodBurst: 2,
      floodIntervalMs: 500,
    });
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
    const ch = ircChannel(
      { host: server.host, port: server.port, nick: 'phoenix', timeoutMs: 3000 },
      { reconnectBaseMs: 200, reconnectMaxMs: 1000 },
      ctx,
    );
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

describe('irc against ngircd: TLS', {
  skip: skip ?? (OPENSSL ? undefined : 'openssl is not installed: cannot make a certificate'),
}, () => {
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

describe('irc recipient rule (checked when a request is accepted and before every send)', () => {
  it('takes what the platform names a recipient by and refuses the rest, naming the shape', () => {
    for (const to of ['#hookgate', '##ops', '&local', 'alice', 'bob[m]'])
      assert.equal(checkIrcRecipient(to), undefined, to);
    for (const to of ['', '1 2', '1\n2', ':nick', 'a,b', '#a b'])
      assert.match(checkIrcRecipient(to) ?? '', /#channel or a nick, without spaces or commas/, JSON.stringify(to));
  });
});
