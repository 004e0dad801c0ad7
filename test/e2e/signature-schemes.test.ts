/**
 * The `twilio` and `bearer` signature schemes against the real server process. Twilio: a form-encoded SMS webhook
 * signed by Twilio's own library for the public URL Twilio calls (a proxy's, not the one the test reaches), its
 * query string included; a JSON body with `bodySHA256`, sent by `hookgate send hook --sign`. Bearer: Alertmanager's
 * `Authorization: Bearer <secret>` reaches the mapping's verifier without being taken for a wrong hook token, and a
 * wrong one is a 401 like a wrong signature. Runs on SQLite, and on PostgreSQL with HOOKGATE_TEST_STORE=postgres.
 * `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { twilio } from '../support/sender-sdks.js';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { type Hookgate, request, runCli, startHookgate, TOKEN } from '../support/server.js';
import { withStoreAt } from '../support/store-at.js';

const TWILIO_TOKEN = 'twilio-auth-token-e2e-0123456789';
/** What Twilio is configured to call: the proxy in front of hookgate, which hookgate cannot see. */
const PUBLIC_URL = 'https://hooks.example.com/hooks/twilio';
const BEARER = 'alertmanager-bearer-secret-e2e-0123';
const FORM = 'application/x-www-form-urlencoded';

describe('signature schemes: twilio and bearer (real process)', () => {
  let hg: Hookgate;
  let clientSeq = 0;
  /** Each test its own client address (behind the trusted proxy), so one test's failures lock out no other. */
  const send = (path: string, body: string, headers: Record<string, string>, client = `10.7.0.${++clientSeq}`) =>
    request(`${hg.url}${path}`, { method: 'POST', body, headers: { 'x-forwarded-for': client, ...headers } });
  const runsOf = (mappingId: string) =>
    withStoreAt(hg.dir, async (s: SqliteStore) =>
      (await s.listRuns({ limit: 500 })).filter((r) => r.mappingId === mappingId),
    );

  before(async () => {
    hg = await startHookgate({
      config: {
        gateway: { trustedProxies: ['127.0.0.1', '::1'] },
        hooks: {
          authFailureLimit: { maxFailures: 3, windowSeconds: 600, lockoutSeconds: 600 },
          mappings: [
            {
              id: 'twilio-sms',
              match: { path: 'twilio' },
              name: 'SMS',
              messageTemplate: 'SMS from {{From}} ({{query.src}}): {{Body}}',
              signature: { scheme: 'twilio', secret: TWILIO_TOKEN, url: PUBLIC_URL },
            },
            {
              id: 'twilio-json',
              match: { path: 'twilio-json' },
              name: 'Conversations',
              messageTemplate: '{{EventType}}: {{Body}}',
              signature: { scheme: 'twilio', secret: TWILIO_TOKEN, url: 'https://hooks.example.com/hooks/twilio-json' },
            },
            {
              id: 'alerts',
              match: { path: 'alerts' },
              name: 'Alertmanager',
              messageTemplate: '{{status}}: {{alerts[0].labels.alertname}}',
              signature: { scheme: 'bearer', secret: BEARER },
            },
          ],
        },
      },
    });
  });
  after(() => hg?.cleanup());

  describe('twilio', () => {
    const sms: Record<string, string> = {
      MessageSid: 'SM0123456789abcdef0123456789abcdef',
      AccountSid: 'AC0123456789abcdef0123456789abcdef',
      From: '+14158675309',
      To: '+18005551212',
      Body: 'Ahoy, the door is open & the light is on',
      NumMedia: '0',
    };
    const body = new URLSearchParams(sms).toString();
    const signature = (token = TWILIO_TOKEN) => twilio.getExpectedTwilioSignature(token, `${PUBLIC_URL}?src=sms`, sms);

    it('a form webhook signed for the public URL and its query string becomes a run, answered with empty TwiML; its retry is a duplicate', async () => {
      const headers = {
        'content-type': FORM,
        'x-twilio-signature': signature(),
        'i-twilio-idempotency-token': 'e2e-idem-1',
      };
      const r = await send('/hooks/twilio?src=sms', body, headers);
      assert.equal(r.status, 200, r.text);
      // Twilio reads a messaging webhook's answer as TwiML: an empty <Response/> sends no reply.
      assert.equal(r.text, '<?xml version="1.0" encoding="UTF-8"?><Response/>');
      assert.match(String(r.headers.get('content-type')), /^text\/xml/);
      const retry = await send('/hooks/twilio?src=sms', body, headers);
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.text, r.text);
      const runs = await runsOf('twilio-sms');
      assert.equal(runs.length, 1);
      assert.equal(
        runs[0]!.message.includes('SMS from +14158675309 (sms): Ahoy, the door is open & the light is on'),
        true,
        runs[0]!.message,
      );
    });

    it('a wrong auth token, another query string or a changed field is 401', async () => {
      const cases: Array<[string, string, string]> = [
        ['/hooks/twilio?src=sms', body, signature('not-the-auth-token')],
        ['/hooks/twilio?src=mms', body, signature()],
        ['/hooks/twilio?src=sms', body.replace('Ahoy', 'Ahoi'), signature()],
      ];
      for (const [path, b, sig] of cases) {
        const r = await send(path, b, { 'content-type': FORM, 'x-twilio-signature': sig });
        assert.equal(r.status, 401, `${path} ${r.text}`);
        assert.deepEqual([r.body?.code, r.body?.error], ['unauthorized', 'missing or invalid signature']);
      }
    });

    it('a JSON body: hookgate send hook --sign adds bodySHA256 to the URL and signs it; hookgate mappings test renders it', async () => {
      const data = JSON.stringify({ EventType: 'onMessageAdded', Body: 'hello from Conversations' });
      const args = [
        'send',
        'hook',
        'twilio-json',
        '--data',
        data,
        '--sign',
        '--config',
        hg.configFile,
        '--url',
        hg.url,
      ];
      const sent = await runCli(args, { cwd: hg.dir });
      assert.equal(sent.code, 0, sent.stdout + sent.stderr);
      assert.match(String((JSON.parse(sent.stdout) as { runId?: string }).runId), /^[0-9a-f-]{36}$/);
      const runs = await runsOf('twilio-json');
      assert.equal(runs.length, 1);
      assert.equal(runs[0]!.message.includes('onMessageAdded: hello from Conversations'), true, runs[0]!.message);
      const tested = await runCli(['mappings', 'test', 'twilio-json', '--data', data, '--config', hg.configFile], {
        cwd: hg.dir,
      });
      assert.equal(tested.code, 0, tested.stdout + tested.stderr);
      assert.match(tested.stdout, /signed here as twilio/);
    });
  });

  describe('bearer', () => {
    const alert = JSON.stringify({
      version: '4',
      status: 'firing',
      receiver: 'hookgate',
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'DiskFull', instance: 'db1' },
          annotations: { summary: '/var is 97% full' },
        },
      ],
    });
    const json = { 'content-type': 'application/json' };

    it('the mapping secret as a bearer token is accepted, and never counted as a wrong hook token', async () => {
      // Three failures lock a client out: five good requests between wrong ones would trip it if they were counted.
      const client = '10.7.1.1';
      const wrong = await send('/hooks/alerts', alert, { ...json, authorization: 'Bearer not-the-secret' }, client);
      assert.equal(wrong.status, 401, wrong.text);
      assert.deepEqual([wrong.body?.code, wrong.body?.error], ['unauthorized', 'missing or invalid signature']);
      for (let i = 0; i < 5; i++) {
        const ok = await send(
          '/hooks/alerts',
          alert,
          { ...json, authorization: `Bearer ${BEARER}`, 'idempotency-key': `alert-${i}` },
          client,
        );
        assert.equal(ok.status, 200, ok.text);
      }
      const again = await send('/hooks/alerts', alert, { ...json, authorization: 'Bearer still-not-it' }, client);
      assert.equal(again.status, 401, again.text);
      const runs = await runsOf('alerts');
      assert.equal(runs.length, 5);
      assert.equal(runs[0]!.message.includes('firing: DiskFull'), true, runs[0]!.message);
    });

    it('a wrong bearer is a 401 like a wrong signature and counts: the third locks the client out (429)', async () => {
      const client = '10.7.1.2';
      for (let i = 0; i < 3; i++) {
        const r = await send('/hooks/alerts', alert, { ...json, authorization: `Bearer wrong-${i}` }, client);
        assert.equal(r.status, 401, r.text);
      }
      const locked = await send('/hooks/alerts', alert, { ...json, authorization: `Bearer ${BEARER}` }, client);
      assert.equal(locked.status, 429, locked.text);
      assert.ok(Number(locked.headers.get('retry-after')) >= 1);
    });

    it('the hook token does not open the bearer mapping, and the bearer secret opens no other route', async () => {
      const token = await send('/hooks/alerts', alert, { ...json, authorization: `Bearer ${TOKEN}` });
      assert.equal(token.status, 401, token.text);
      assert.equal(token.body?.error, 'missing or invalid signature');
      const wake = await send('/hooks/wake', JSON.stringify({ text: 'hi' }), {
        ...json,
        authorization: `Bearer ${BEARER}`,
      });
      assert.equal(wake.status, 401, wake.text);
      assert.equal(wake.body?.error, 'missing or invalid hook token');
    });
  });
});
