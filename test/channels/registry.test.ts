import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { channelsSchema } from '../../src/config/schema/channels.js';
import { createChannelRegistry, loadRecipientCheck } from '../../src/channels/registry.js';
import type { ChannelContext, OutboundMessage } from '../../src/channels/types.js';
import { fromRoot } from '../support/paths.js';
import { startTelegram } from '../support/platforms/telegram.js';
import { tempDir } from '../support/temp-dir.js';

const root = tempDir('hookgate-registry-');
const configDir = join(root, 'config');
const outside = join(root, 'outside');
mkdirSync(join(configDir, 'channels'), { recursive: true });
mkdirSync(outside);

const DEFAULT_BOT = '111111:default-bot-token';
const ALERTS_BOT = '222222:alerts-bot-token';

const ctx: ChannelContext = { configDir, logger: { info() {}, warn() {}, error() {} } };
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

function plugin(name: string, source: string, dir = join(configDir, 'channels')): string {
  writeFileSync(join(dir, name), source);
  return `./channels/${name}`;
}

function config(raw: Record<string, unknown>) {
  return channelsSchema.parse(raw);
}

function message(channel: string, to: string, text = 'hello'): OutboundMessage {
  return {
    deliveryId: 'dlv-1',
    channel,
    to,
    text,
    runId: 'run-1',
    sessionKey: 'hook:x',
    agentId: 'main',
    hookName: 'X',
    createdAt: new Date().toISOString(),
  };
}

describe('channel registry', () => {
  it('always has log; has webhook and irc when configured; creates no connection up front', async () => {
    const bare = await createChannelRegistry(config({}), ctx);
    assert.deepEqual(bare.ids(), ['log']);
    await bare.close();

    const reg = await createChannelRegistry(
      config({
        irc: { host: '127.0.0.1', port: 1, nick: 'hookgate' },
        webhook: { targets: { ops: { url: 'http://127.0.0.1:1/h', secret: SECRET } } },
      }),
      ctx,
    );
    assert.deepEqual(reg.ids(), ['irc', 'webhook', 'log']);
    assert.equal(reg.get('webhook')?.id, 'webhook');
    assert.equal(reg.get('irc')?.id, 'irc');
    await reg.close();
  });

  it('builds one instance per (platform, account); get(id, accountId) resolves it, each with its own credentials', async () => {
    const telegram = await startTelegram({ token: DEFAULT_BOT, extraTokens: [ALERTS_BOT] });
    try {
      const reg = await createChannelRegistry(
        config({
          telegram: { botToken: DEFAULT_BOT, apiBaseUrl: telegram.url, accounts: { alerts: { botToken: ALERTS_BOT } } },
          irc: { host: '127.0.0.1', port: 1, nick: 'hg', accounts: { ops: { nick: 'hg-ops' } } },
        }),
        ctx,
      );
      assert.deepEqual(reg.ids(), ['telegram', 'irc', 'log'], 'accounts are not channel ids');
      const main = reg.get('telegram');
      const alerts = reg.get('Telegram', 'alerts');
      assert.ok(main && alerts && main !== alerts);
      assert.equal(reg.get('telegram', 'default'), main, '"default" is the top-level section');
      assert.equal(reg.get('telegram', 'nope'), undefined);
      assert.equal(reg.get('log', 'alerts'), undefined, 'extension channels have no accounts');
      assert.ok(reg.get('irc', 'ops') && reg.get('irc', 'ops') !== reg.get('irc'));
      assert.deepEqual(await alerts.send(message('telegram', '1001', 'via alerts')), { ok: true, platformIds: ['1'] });
      assert.deepEqual(await main.send(message('telegram', '1001', 'via default')), { ok: true, platformIds: ['2'] });
      assert.deepEqual(
        telegram.requests.map((r) => r.path),
        [`/bot${ALERTS_BOT}/sendMessage`, `/bot${DEFAULT_BOT}/sendMessage`],
      );
      await reg.close();
    } finally {
      await telegram.close();
    }
  });

  it('normalizes names: case, spaces and aliases', async () => {
    const reg = await createChannelRegistry(config({}), ctx);
    assert.equal(reg.normalize(' Teams '), 'msteams');
    assert.equal(reg.normalize('IMSG'), 'imessage');
    assert.equal(reg.normalize('google-chat'), 'googlechat');
    assert.equal(reg.normalize('LOG'), 'log');
    assert.equal(reg.get('Log')?.id, 'log');
    assert.equal(reg.get('telegram'), undefined, 'not configured');
    await reg.close();
  });

  it('loads plugins exported as an object, as `channel`, or as a (possibly async) factory given the context', async () => {
    const a = plugin(
      'obj.mjs',
      `export default { id: 'pager', maxTextLength: 160, async send() { return { ok: true }; } };`,
    );
    const b = plugin(
      'named.mjs',
      `export const channel = { id: 'sms', maxTextLength: 70, async send() { return { ok: true, platformIds: ['x'] }; } };`,
    );
    const c = plugin(
      'factory.mjs',
      `export default async (ctx) => ({ id: 'echo-dir', maxTextLength: 1000, async send(m) { return { ok: true, platformIds: [ctx.configDir, m.to] }; }, async close() { globalThis.__factoryClosed = true; } });`,
    );
    const reg = await createChannelRegistry(config({ plugins: [a, b, c] }), ctx);
    assert.deepEqual(reg.ids(), ['log', 'pager', 'sms', 'echo-dir']);
    assert.equal(reg.get('PAGER')?.maxTextLength, 160);
    assert.deepEqual(await reg.get('echo-dir')?.send(message('echo-dir', 'room')), {
      ok: true,
      platformIds: [configDir, 'room'],
    });
    await reg.close();
    assert.equal((globalThis as { __factoryClosed?: boolean }).__factoryClosed, true);
  });

  it("checks a recipient by its channel's rule (any account), a plugin's own, or only the shared one; the CLI's check agrees without starting channels", async () => {
    const entry = plugin(
      'digits.mjs',
      `export default { id: 'digits', maxTextLength: 10, send: async () => ({ ok: true }), checkRecipient: (to) => (/^[0-9]+$/.test(to) ? undefined : 'digits only') };`,
    );
    const raw = {
      discord: { botToken: 'x', accounts: { alerts: { botToken: 'y' } } },
      msteams: { appId: 'a', appPassword: 'p', serviceUrl: 'http://127.0.0.1:1/' },
      webhook: { targets: { ops: { url: 'http://127.0.0.1:1/h', secret: SECRET } } },
      plugins: [entry],
    };
    const reg = await createChannelRegistry(config(raw), ctx);
    const cli = await loadRecipientCheck(config(raw));
    const cases: Array<[string, string, RegExp | undefined, RegExp | undefined]> = [
      // channel, to, what the service says, what the CLI says (it does not load plugins)
      ['discord', '1100000000000000001', undefined, undefined],
      [
        'Discord',
        '..',
        /channel discord: expected a channel id: a snowflake/,
        /channel discord: expected a channel id: a snowflake/,
      ],
      ['teams', '.', /channel msteams: expected a conversation id/, /channel msteams: expected a conversation id/],
      ['webhook', 'ops', undefined, undefined],
      [
        'webhook',
        'http://169.254.169.254/',
        /the name of a configured target \(channels\.webhook\.targets: "ops"\)/,
        /"ops"/,
      ],
      ['digits', '12', undefined, undefined],
      ['digits', 'ab', /channel digits: expected digits only/, undefined],
      ['digits', '..', /channel digits: expected digits only/, /not "\." or "\.\."/],
      ['log', 'anything', undefined, undefined],
      ['last', '..', /not "\." or "\.\."/, /not "\." or "\.\."/],
    ];
    for (const [channel, to, service, fromCli] of cases) {
      for (const [who, got, want] of [
        ['service', reg.checkRecipient(channel, to), service],
        ['cli', cli(channel, to), fromCli],
      ] as const) {
        if (want) assert.match(got ?? '', want, `${who} ${channel} ${to}`);
        else assert.equal(got, undefined, `${who} ${channel} ${to}`);
      }
    }
    assert.equal(
      reg.get('discord', 'alerts')?.checkRecipient?.('..') !== undefined,
      true,
      'an account has its platform rule',
    );
    await reg.close();
  });

  it('rejects plugins with a clear error naming the plugin file', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['core-id.mjs', `export default { id: 'telegram', maxTextLength: 1, send() {} };`, /reserved/],
      ['builtin-id.mjs', `export default { id: 'webhook', maxTextLength: 1, send() {} };`, /reserved/],
      ['alias-id.mjs', `export default { id: 'teams', maxTextLength: 1, send() {} };`, /reserved/],
      ['last-id.mjs', `export default { id: 'last', maxTextLength: 1, send() {} };`, /reserved/],
      ['upper-id.mjs', `export default { id: 'Matrix', maxTextLength: 1, send() {} };`, /lower-case/],
      ['no-send.mjs', `export default { id: 'nosend', maxTextLength: 1 };`, /`send` must be a function/],
      ['bad-max.mjs', `export default { id: 'badmax', maxTextLength: '4000', send() {} };`, /maxTextLength/],
      [
        'bad-rule.mjs',
        `export default { id: 'badrule', maxTextLength: 1, send() {}, checkRecipient: 'digits' };`,
        /`checkRecipient` must be a function/,
      ],
      ['no-export.mjs', `export const other = 1;`, /neither `default` nor `channel`/],
      [
        'throws.mjs',
        `export default () => { throw new Error('MISSING_ENV is not set'); };`,
        /factory failed: MISSING_ENV is not set/,
      ],
      ['syntax.mjs', `export default {`, /failed to load/],
    ];
    for (const [file, source, why] of cases) {
      const entry = plugin(file, source);
      await assert.rejects(createChannelRegistry(config({ plugins: [entry] }), ctx), (err: Error) => {
        assert.ok(err.message.includes(`channels.plugins[0] (${entry})`), err.message);
        assert.match(err.message, why);
        return true;
      });
    }
  });

  it('rejects two plugins with the same id', async () => {
    const a = plugin('dup-a.mjs', `export default { id: 'dup', maxTextLength: 1, send() {} };`);
    const b = plugin('dup-b.mjs', `export default { id: 'dup', maxTextLength: 1, send() {} };`);
    await assert.rejects(
      createChannelRegistry(config({ plugins: [a, b] }), ctx),
      /channels\.plugins\[1\] \(.*dup-b\.mjs\): id "dup" is already used/,
    );
  });

  it('keeps plugins inside the config directory: no .., no absolute path outside, no symlink escape', async () => {
    writeFileSync(join(outside, 'evil.mjs'), `export default { id: 'evil', maxTextLength: 1, send() {} };`);
    symlinkSync(join(outside, 'evil.mjs'), join(configDir, 'channels', 'link.mjs'));
    symlinkSync(outside, join(configDir, 'channels', 'linkdir'));
    const entries: Array<[string, RegExp]> = [
      ['../outside/evil.mjs', /inside the config directory/],
      [join(outside, 'evil.mjs'), /inside the config directory/],
      ['./channels/link.mjs', /symlink/],
      ['./channels/linkdir/evil.mjs', /symlink/],
      ['./channels/missing.mjs', /file not found/],
    ];
    for (const [entry, why] of entries) {
      await assert.rejects(createChannelRegistry(config({ plugins: [entry] }), ctx), (err: Error) => {
        assert.match(err.message, why, entry);
        assert.ok(err.message.includes(entry));
        return true;
      });
    }
    // An absolute path that stays inside is fine.
    const inside = join(configDir, 'channels', 'abs-ok.mjs');
    writeFileSync(inside, `export default { id: 'absok', maxTextLength: 1, async send() { return { ok: true }; } };`);
    const reg = await createChannelRegistry(config({ plugins: [inside] }), ctx);
    assert.ok(reg.ids().includes('absok'));
    await reg.close();
  });

  it('closes what it already created when a later plugin fails', async () => {
    const good = plugin(
      'closes.mjs',
      `export default { id: 'closer', maxTextLength: 1, send() {}, async close() { globalThis.__closerClosed = true; } };`,
    );
    const bad = plugin('bad-after.mjs', `export default { id: 'bad after', maxTextLength: 1, send() {} };`);
    await assert.rejects(createChannelRegistry(config({ plugins: [good, bad] }), ctx));
    assert.equal((globalThis as { __closerClosed?: boolean }).__closerClosed, true);
  });

  it('picks up an edited plugin on the next load (a config reload)', async () => {
    const entry = plugin(
      'edited.mjs',
      `export default () => ({ id: 'edited', maxTextLength: 1, async send() { return { ok: true, platformIds: ['v1'] }; } });`,
    );
    const first = await createChannelRegistry(config({ plugins: [entry] }), ctx);
    assert.deepEqual(await first.get('edited')?.send(message('edited', 'x')), { ok: true, platformIds: ['v1'] });
    await first.close();
    plugin(
      'edited.mjs',
      `export default () => ({ id: 'edited', maxTextLength: 1, async send() { return { ok: true, platformIds: ['v2'] }; } });`,
    );
    utimesSync(join(configDir, 'channels', 'edited.mjs'), new Date(), new Date(Date.now() + 5000));
    const second = await createChannelRegistry(config({ plugins: [entry] }), ctx);
    assert.deepEqual(await second.get('edited')?.send(message('edited', 'x')), { ok: true, platformIds: ['v2'] });
    await second.close();
  });

  it('refuses non-ESM plugin paths and duplicates in the config schema', () => {
    assert.ok(!channelsSchema.safeParse({ plugins: ['./channels/x.ts'] }).success);
    assert.ok(!channelsSchema.safeParse({ plugins: ['./a.mjs', './a.mjs'] }).success);
    assert.ok(channelsSchema.safeParse({ plugins: ['./a.mjs', './b.js'] }).success);
  });
});

// ----------------------------------------------------------------------------------------------------------------
// The documented example plugin, loaded through the registry, against a small Matrix homeserver stand-in.

describe('example plugin: examples/channels/matrix.mjs', () => {
  const examplesDir = fromRoot('examples');
  let server: Server;
  let base = '';
  const seen: Array<{ method: string; url: string; auth: string | undefined; body: unknown }> = [];
  const script: Array<{ status: number; body: unknown; headers?: Record<string, string> }> = [];
  const saved = { ...process.env };

  before(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let data = '';
      req.on('data', (c: Buffer) => (data += c.toString()));
      req.on('end', () => {
        seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          auth: req.headers.authorization,
          body: data ? JSON.parse(data) : undefined,
        });
        const next = script.shift();
        if (next) {
          res.writeHead(next.status, { 'content-type': 'application/json', ...(next.headers ?? {}) });
          res.end(JSON.stringify(next.body));
        } else if (req.method === 'GET' && req.url?.startsWith('/_matrix/client/v3/directory/room/')) {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ room_id: '!resolved:hs.test', servers: ['hs.test'] }));
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ event_id: `$ev${seen.length}` }));
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    process.env = saved;
    await new Promise<void>((r) => server.close(() => r()));
  });

  async function registry() {
    return createChannelRegistry(config({ plugins: ['./channels/matrix.mjs'] }), { ...ctx, configDir: examplesDir });
  }

  it('sends m.room.message with the delivery id as the transaction id', async () => {
    process.env.MATRIX_HOMESERVER_URL = `${base}/`;
    process.env.MATRIX_ACCESS_TOKEN = 'syt_test_token';
    delete process.env.MATRIX_MSGTYPE;
    const reg = await registry();
    assert.deepEqual(reg.ids(), ['log', 'matrix']);
    const ch = reg.get('matrix');
    assert.ok(ch);
    const r = await ch.send(message('matrix', '!abc:hs.test', 'deploy done'));
    assert.equal(r.ok, true);
    assert.deepEqual(r.ok && r.platformIds?.length, 1);
    const put = seen.at(-1);
    assert.equal(put?.method, 'PUT');
    assert.equal(put?.url, `/_matrix/client/v3/rooms/${encodeURIComponent('!abc:hs.test')}/send/m.room.message/dlv-1`);
    assert.equal(put?.auth, 'Bearer syt_test_token');
    assert.deepEqual(put?.body, { msgtype: 'm.notice', body: 'deploy done' });
    await reg.close();
  });

  it('resolves a room alias once, and maps 429 and 403', async () => {
    process.env.MATRIX_HOMESERVER_URL = base;
    process.env.MATRIX_ACCESS_TOKEN = 'syt_test_token';
    process.env.MATRIX_MSGTYPE = 'm.text';
    const reg = await registry();
    const ch = reg.get('matrix');
    assert.ok(ch);
    seen.length = 0;
    assert.equal((await ch.send(message('matrix', '#ops:hs.test'))).ok, true);
    assert.equal((await ch.send(message('matrix', '#ops:hs.test'))).ok, true);
    assert.deepEqual(
      seen.map((s) => s.method),
      ['GET', 'PUT', 'PUT'],
    );
    assert.ok(seen[1]?.url.includes(encodeURIComponent('!resolved:hs.test')));
    assert.deepEqual(seen[1]?.body, { msgtype: 'm.text', body: 'hello' });

    script.push({
      status: 429,
      body: { errcode: 'M_LIMIT_EXCEEDED', error: 'Too many requests', retry_after_ms: 2500 },
    });
    const limited = await ch.send(message('matrix', '!abc:hs.test'));
    assert.deepEqual(limited, {
      ok: false,
      retryable: true,
      status: 429,
      error: 'matrix answered 429 M_LIMIT_EXCEEDED',
      retryAfterMs: 2500,
    });

    script.push({ status: 403, body: { errcode: 'M_FORBIDDEN', error: 'not in room' } });
    const forbidden = await ch.send(message('matrix', '!abc:hs.test'));
    assert.ok(!forbidden.ok && forbidden.retryable === false && forbidden.status === 403);
    await reg.close();
  });

  it('fails to load, naming the plugin, when its environment is missing', async () => {
    delete process.env.MATRIX_ACCESS_TOKEN;
    process.env.MATRIX_HOMESERVER_URL = base;
    await assert.rejects(
      registry(),
      /channels\.plugins\[0\] \(\.\/channels\/matrix\.mjs\): its factory failed: MATRIX_ACCESS_TOKEN must be set/,
    );
  });
});
