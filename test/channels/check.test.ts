/**
 * Each platform's `check` (hookgate doctor's "who am I" call) against the platform stand-ins, which answer the
 * who-am-I endpoints as the real APIs do: the right credentials pass, wrong ones fail naming what to fix, a server
 * that is down fails as unreachable, and no secret ever appears in what the check says.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { CheckResult } from '../../src/check.js';
import { createDiscordChannel } from '../../src/channels/discord.js';
import { createGoogleChatChannel } from '../../src/channels/googlechat.js';
import { createIMessageChannel } from '../../src/channels/imessage.js';
import { createLogChannel } from '../../src/channels/log.js';
import { createMsTeamsChannel } from '../../src/channels/msteams.js';
import { createSignalChannel } from '../../src/channels/signal.js';
import { createSlackChannel } from '../../src/channels/slack.js';
import { createTelegramChannel } from '../../src/channels/telegram.js';
import type { Channel } from '../../src/channels/types.js';
import { checkTargets } from '../../src/channels/webhook.js';
import { createWhatsAppChannel } from '../../src/channels/whatsapp.js';
import {
  discordSchema,
  googlechatSchema,
  imessageSchema,
  msteamsSchema,
  signalSchema,
  slackSchema,
  telegramSchema,
  webhookChannelSchema,
  whatsappSchema,
} from '../../src/config/schema/channels.js';
import {
  BLUEBUBBLES_TEST_PASSWORD,
  closedPortUrl,
  createServiceAccountKey,
  DISCORD_TEST_TOKEN,
  MSTEAMS_TEST_APP_ID,
  MSTEAMS_TEST_APP_PASSWORD,
  recordingContext,
  SIGNAL_TEST_NUMBER,
  SLACK_TEST_TOKEN,
  startDiscord,
  startGoogleChat,
  startIMessage,
  startMsTeams,
  startSignal,
  startSlack,
  startTelegram,
  startWhatsApp,
  TELEGRAM_TEST_TOKEN,
  WHATSAPP_TEST_PHONE_NUMBER_ID,
  WHATSAPP_TEST_TOKEN,
} from '../support/platforms/index.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

const ctx = recordingContext();
const check = (ch: Channel): Promise<CheckResult> => ch.check!(AbortSignal.timeout(5000));

function assertClean(r: CheckResult, secrets: string[]): void {
  const text = JSON.stringify(r);
  for (const s of secrets) assert.ok(!text.includes(s), `secret ${s.slice(0, 8)}… in ${text}`);
}

describe('channel checks (hookgate doctor)', () => {
  it('telegram: getMe names the bot; a wrong token fails pointing at botToken; a closed port is unreachable', async () => {
    const api = await startTelegram();
    try {
      const ch = (botToken: string, apiBaseUrl = api.url) =>
        createTelegramChannel(telegramSchema.parse({ botToken, apiBaseUrl }), ctx);
      const ok = await check(ch(TELEGRAM_TEST_TOKEN));
      assert.deepEqual(ok, { status: 'ok', detail: 'bot @hookgate_test_bot (id 123456789)' });
      assert.equal(api.requests.at(-1)?.path, `/bot${TELEGRAM_TEST_TOKEN}/getMe`);
      assert.equal(api.received.length, 0, 'a check sends no message');
      const wrong = '999:wrong-token';
      const bad = await check(ch(wrong));
      assert.equal(bad.status, 'fail');
      assert.match(bad.detail, /telegram error 401: Unauthorized/);
      assert.match(bad.fix ?? '', /botToken/);
      assertClean(bad, [wrong, TELEGRAM_TEST_TOKEN]);
      const down = await check(ch(TELEGRAM_TEST_TOKEN, await closedPortUrl()));
      assert.equal(down.status, 'fail');
      assert.match(down.detail, /telegram unreachable \(ECONNREFUSED\)/);
      assertClean(down, [TELEGRAM_TEST_TOKEN]);
    } finally {
      await api.close();
    }
  });

  it('slack: auth.test names bot and workspace; a refused token reads as at send time (invalid_auth)', async () => {
    const api = await startSlack();
    try {
      const ch = (botToken: string) => createSlackChannel(slackSchema.parse({ botToken, apiBaseUrl: api.url }), ctx);
      assert.deepEqual(await check(ch(SLACK_TEST_TOKEN)), {
        status: 'ok',
        detail: 'bot hookgate_bot in workspace hookgate test',
      });
      assert.equal(api.requests.at(-1)?.path, '/auth.test');
      const wrong = 'xoxb-0000-wrong';
      const bad = await check(ch(wrong));
      assert.equal(bad.status, 'fail');
      assert.equal(bad.detail, 'slack error invalid_auth (the bot token is wrong)');
      assert.match(bad.fix ?? '', /botToken/);
      assertClean(bad, [wrong, SLACK_TEST_TOKEN]);
    } finally {
      await api.close();
    }
  });

  it('discord: GET /users/@me names the bot; a wrong token is 401', async () => {
    const api = await startDiscord();
    try {
      const ch = (botToken: string) =>
        createDiscordChannel(discordSchema.parse({ botToken, apiBaseUrl: api.url }), ctx);
      assert.deepEqual(await check(ch(DISCORD_TEST_TOKEN)), { status: 'ok', detail: 'bot hookgate-test (id 1000)' });
      const bad = await check(ch('wrong.token.value'));
      assert.equal(bad.status, 'fail');
      assert.match(bad.detail, /discord answered HTTP 401/);
      assert.match(bad.fix ?? '', /botToken/);
      assertClean(bad, ['wrong.token.value', DISCORD_TEST_TOKEN]);
    } finally {
      await api.close();
    }
  });

  it('whatsapp: GET /{version}/{phone-number-id}; a bad token (190) and an unknown id (100) name their fields', async () => {
    const api = await startWhatsApp();
    try {
      const ch = (over: Record<string, unknown>) =>
        createWhatsAppChannel(
          whatsappSchema.parse({
            accessToken: WHATSAPP_TEST_TOKEN,
            phoneNumberId: WHATSAPP_TEST_PHONE_NUMBER_ID,
            apiBaseUrl: api.url,
            ...over,
          }),
          ctx,
        );
      const ok = await check(ch({}));
      assert.equal(ok.status, 'ok');
      assert.match(ok.detail, /\+1 555-010-0000 \(Hookgate Test\)/);
      const badToken = await check(ch({ accessToken: 'EAAGwrong' }));
      assert.equal(badToken.status, 'fail');
      assert.match(badToken.detail, /code 190/);
      assert.match(badToken.fix ?? '', /accessToken/);
      const badId = await check(ch({ phoneNumberId: '999' }));
      assert.equal(badId.status, 'fail');
      assert.match(badId.fix ?? '', /phoneNumberId/);
      assertClean(badToken, ['EAAGwrong', WHATSAPP_TEST_TOKEN]);
    } finally {
      await api.close();
    }
  });

  it('signal: /v1/about answers and /v1/accounts lists the number; an unregistered number fails', async () => {
    const api = await startSignal();
    try {
      const ch = (number: string) => createSignalChannel(signalSchema.parse({ apiBaseUrl: api.url, number }), ctx);
      const ok = await check(ch(SIGNAL_TEST_NUMBER));
      assert.equal(ok.status, 'ok');
      assert.match(ok.detail, /0\.92 \(mode json-rpc\), \+15550001111 registered/);
      const bad = await check(ch('+15559999999'));
      assert.equal(bad.status, 'fail');
      assert.match(bad.detail, /no account \+15559999999/);
      assert.match(bad.fix ?? '', /register or link/);
    } finally {
      await api.close();
    }
  });

  it('imessage: BlueBubbles server info; a wrong password fails without showing it (it travels in the URL)', async () => {
    const api = await startIMessage();
    try {
      const ch = (password: string, method = 'apple-script') =>
        createIMessageChannel(imessageSchema.parse({ serverUrl: api.url, password, method }), ctx);
      assert.deepEqual(await check(ch(BLUEBUBBLES_TEST_PASSWORD)), {
        status: 'ok',
        detail: 'BlueBubbles 1.9.9 on macOS 14.5 (Private API off)',
      });
      assert.equal(api.requests.at(-1)?.query.get('password'), BLUEBUBBLES_TEST_PASSWORD);
      const warn = await check(ch(BLUEBUBBLES_TEST_PASSWORD, 'private-api'));
      assert.equal(warn.status, 'warn');
      const bad = await check(ch('not-the-password'));
      assert.deepEqual(bad.status, 'fail');
      assert.equal(bad.detail, 'imessage: BlueBubbles rejected the password');
      assertClean(bad, ['not-the-password', BLUEBUBBLES_TEST_PASSWORD]);
    } finally {
      await api.close();
    }
  });

  it('googlechat: the JWT grant gets a token; a key the endpoint does not know fails; a static token is a warning', async () => {
    const sa = createServiceAccountKey();
    const other = createServiceAccountKey('other@hookgate-test.iam.gserviceaccount.com');
    const api = await startGoogleChat({
      serviceAccounts: [{ clientEmail: sa.key.client_email!, publicKey: sa.publicKey }],
    });
    try {
      const ch = (key: Record<string, string>) =>
        createGoogleChatChannel(
          googlechatSchema.parse({ serviceAccount: JSON.stringify(key), apiBaseUrl: api.url, tokenUrl: api.tokenUrl }),
          ctx,
        );
      const ok = await check(ch(sa.key));
      assert.equal(ok.status, 'ok');
      assert.match(ok.detail, /obtained an access token/);
      const bad = await check(ch(other.key));
      assert.equal(bad.status, 'fail');
      assert.match(bad.detail, /invalid_grant/);
      assert.match(bad.fix ?? '', /service-account key/);
      assertClean(bad, [other.key.private_key!.slice(40, 80)]);
      const fixed = createGoogleChatChannel(
        googlechatSchema.parse({ accessToken: 'ya29.static', apiBaseUrl: api.url, tokenUrl: api.tokenUrl }),
        ctx,
      );
      assert.equal((await check(fixed)).status, 'warn');
    } finally {
      await api.close();
    }
  });

  it('msteams: the client-credentials grant; a wrong secret fails naming appPassword, and is not shown', async () => {
    const api = await startMsTeams();
    try {
      const ch = (appPassword: string) =>
        createMsTeamsChannel(
          msteamsSchema.parse({
            appId: MSTEAMS_TEST_APP_ID,
            appPassword,
            serviceUrl: api.url,
            tokenUrl: api.tokenUrl(),
          }),
          ctx,
        );
      assert.equal((await check(ch(MSTEAMS_TEST_APP_PASSWORD))).status, 'ok');
      const bad = await check(ch('wrong-secret-value'));
      assert.equal(bad.status, 'fail');
      assert.match(bad.detail, /invalid_client/);
      assert.match(bad.fix ?? '', /appPassword/);
      assertClean(bad, ['wrong-secret-value', MSTEAMS_TEST_APP_PASSWORD]);
    } finally {
      await api.close();
    }
  });

  it('webhook: no call; URLs are listed by origin only, plain http to another host is a warning', () => {
    const secret = `whsec_${Buffer.alloc(24, 1).toString('base64')}`;
    const cfg = (targets: Record<string, string>) =>
      webhookChannelSchema.parse({
        targets: Object.fromEntries(Object.entries(targets).map(([k, url]) => [k, { url, secret }])),
      });
    const ok = checkTargets(cfg({ local: 'http://127.0.0.1:9/x?token=abc', remote: 'https://example.com/hook' }));
    assert.equal(ok.status, 'ok');
    assert.ok(!ok.detail.includes('token=abc'), ok.detail);
    const plain = checkTargets(cfg({ remote: 'http://example.com/hook' }));
    assert.equal(plain.status, 'warn');
    assert.match(plain.fix ?? '', /https/);
  });

  it('log: stdout is fine; a file in a writable directory is fine (and not created); an unwritable one fails', async () => {
    const dir = tempDir('hookgate-logcheck-');
    try {
      assert.equal((await check(createLogChannel(undefined, ctx))).status, 'ok');
      const later = await check(createLogChannel({ path: 'sub/replies.jsonl' }, { ...ctx, configDir: dir }));
      assert.equal(later.status, 'ok');
      assert.match(later.detail, /will create/);
      mkdirSync(join(dir, 'ro'), { mode: 0o500 });
      writeFileSync(join(dir, 'x'), '');
      if (process.getuid?.() !== 0) {
        const bad = await check(createLogChannel({ path: 'ro/replies.jsonl' }, { ...ctx, configDir: dir }));
        assert.equal(bad.status, 'fail');
      }
    } finally {
      removeDir(dir);
    }
  });
});

describe('irc check', () => {
  let closed: string;
  before(async () => {
    closed = await closedPortUrl();
  });
  it('a server that is down fails as a connection failure naming host and port', async () => {
    const { ircChannel } = await import('./irc/kit.js');
    const port = Number(new URL(closed).port);
    const ch = ircChannel({ host: '127.0.0.1', port, nick: 'hookgate' });
    const r = await check(ch);
    assert.equal(r.status, 'fail');
    assert.match(r.detail, new RegExp(`127\\.0\\.0\\.1:${port}`));
    assert.match(r.detail, /ECONNREFUSED/);
    await ch.close();
  });
});
