/**
 * The gitlab, alertmanager, linear, sentry, shopify and twilio sender presets (docs/senders.md) against the real
 * server process, each delivery made from the sender's documented sample payload (test/fixtures/senders) and signed
 * as the sender does: GitLab's token header, Alertmanager's bearer token, Linear's, Sentry's and Shopify's HMACs of
 * the body, Twilio's with its own library (`twilio.getExpectedTwilioSignature`). Per sender: the run with the words an
 * agent gets, a tampered body, a wrong secret, a stale timestamp (Linear, Sentry), a redelivery of the same delivery
 * id (one run, the idempotent answer; Alertmanager sends none), an event type the entry does not take (200 ignored),
 * and Twilio's expected answer, TwiML. Runs on SQLite, and on PostgreSQL with HOOKGATE_TEST_STORE=postgres.
 * (`npm run build` first: the server runs from dist.)
 */
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { twilio } from '../support/sender-sdks.js';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { fixture } from '../support/sender-fixtures.js';
import { type Hookgate, request, startHookgate } from '../support/server.js';
import { withStoreAt } from '../support/store-at.js';
import { TOKEN } from '../support/token.js';

const GITLAB_SECRET = 'gitlab-secret-token-for-presets';
const ALERTMANAGER_SECRET = 'alertmanager-bearer-for-presets-0123';
const LINEAR_SECRET = 'lin_wh_presets_signing_secret';
const SENTRY_SECRET = 'sentry-client-secret-for-presets';
const SHOPIFY_SECRET = 'shpss_presets_client_secret';
const TWILIO_TOKEN = 'twilio-auth-token-for-presets-01';
const SECRETS = [GITLAB_SECRET, ALERTMANAGER_SECRET, LINEAR_SECRET, SENTRY_SECRET, SHOPIFY_SECRET, TWILIO_TOKEN];
const TWILIO_URL = 'https://hooks.example.com/hooks/twilio';
const TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

const JSON_TYPE = 'application/json';
const hmacHex = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

describe('more sender presets (real process)', { timeout: 180_000 }, () => {
  let hg: Hookgate;
  let clientSeq = 0;
  // Each request from its own address: the refused ones must not add up to a lockout of the next.
  const send = (path: string, body: string, headers: Record<string, string>) =>
    request(`${hg.url}/hooks/${path}`, {
      method: 'POST',
      body,
      headers: { 'x-forwarded-for': `10.8.${Math.floor(++clientSeq / 250)}.${clientSeq % 250}`, ...headers },
    });
  const withStore = <T>(fn: (s: SqliteStore) => Promise<T>): Promise<T> => withStoreAt(hg.dir, fn);
  const runsOf = (mappingId: string) =>
    withStore(async (s) => (await s.listRuns({ limit: 500 })).filter((r) => r.mappingId === mappingId));
  const runOf = async (mappingId: string, runId: unknown) => {
    const run = (await runsOf(mappingId)).find((x) => x.id === runId);
    assert.ok(run, `the answer names the queued run ${String(runId)}`);
    return run;
  };
  /** Two sends of one delivery: the second is the first answer with duplicate: true, and one run is queued. */
  const once = async (
    path: string,
    first: () => Promise<{ status: number; body?: Record<string, unknown> | null; text: string }>,
    again: typeof first,
  ) => {
    const before = (await runsOf(path)).length;
    const a = await first();
    assert.equal(a.status, 200, a.text);
    const b = await again();
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.body, { ...a.body, duplicate: true });
    assert.equal((await runsOf(path)).length, before + 1);
  };
  const ignored = (r: { status: number; body?: unknown; text: string }) => {
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { ok: true, ignored: true });
  };
  /** Refused with 401 and nothing queued. */
  const refused = async (path: string, ...sends: Array<() => Promise<{ status: number; text: string }>>) => {
    const before = (await runsOf(path)).length;
    for (const s of sends) {
      const r = await s();
      assert.equal(r.status, 401, r.text);
    }
    assert.equal((await runsOf(path)).length, before);
  };

  before(async () => {
    hg = await startHookgate({
      env: { GITLAB_WEBHOOK_SECRET: GITLAB_SECRET, TWILIO_AUTH_TOKEN: TWILIO_TOKEN },
      config: {
        gateway: { trustedProxies: ['127.0.0.1', '::1'] },
        heartbeat: { every: 'off' },
        hooks: {
          presets: [
            { use: 'gitlab', secret: { env: 'GITLAB_WEBHOOK_SECRET' }, wakeMode: 'next-heartbeat' },
            { use: 'alertmanager', secret: ALERTMANAGER_SECRET, wakeMode: 'next-heartbeat' },
            { use: 'linear', secret: LINEAR_SECRET, wakeMode: 'next-heartbeat' },
            { use: 'sentry', secret: SENTRY_SECRET, wakeMode: 'next-heartbeat' },
            { use: 'shopify', secret: SHOPIFY_SECRET, wakeMode: 'next-heartbeat' },
            { use: 'twilio', secret: { env: 'TWILIO_AUTH_TOKEN' }, url: TWILIO_URL, wakeMode: 'next-heartbeat' },
          ],
        },
      },
    });
  });
  after(async () => {
    if (hg) assert.ok(!hg.lines.some((l) => SECRETS.some((s) => l.includes(s))), 'a secret reached the log');
    await hg?.cleanup();
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('gitlab', () => {
    const headers = (event: string, token = GITLAB_SECRET, uuid: string = randomUUID()) => ({
      'content-type': JSON_TYPE,
      'x-gitlab-event': event,
      'x-gitlab-token': token,
      'x-gitlab-event-uuid': uuid,
    });
    const mr = JSON.stringify(fixture('gitlab', 'merge-request'));

    it("a merge request opened: one run with who, what, where and the link, in the merge request's conversation", async () => {
      const r = await send('gitlab', mr, headers('Merge Request Hook'));
      assert.equal(r.status, 200, r.text);
      const run = await runOf('gitlab', r.body?.runId);
      assert.equal(
        run.message,
        'GitLab merge request !1 open in gitlabhq/gitlab-test by root: MS-Viewport\nBranch ms-viewport into master; state opened, draft false, merge status mergeable\nhttp://example.com/diaspora/merge_requests/1',
      );
      assert.equal(run.name, 'GitLab');
      assert.equal(run.sessionKey, 'hook:gitlab:gitlabhq/gitlab-test!1');
      assert.equal(run.sessionMode, 'persistent');
    });

    it('a retry with the same X-Gitlab-Event-UUID is a duplicate: one run', async () => {
      const note = JSON.stringify(fixture('gitlab', 'note-merge-request'));
      const uuid = randomUUID();
      await once(
        'gitlab',
        () => send('gitlab', note, headers('Note Hook', GITLAB_SECRET, uuid)),
        () => send('gitlab', note, headers('Note Hook', GITLAB_SECRET, uuid)),
      );
    });

    it('a wrong token and no token are 401 (GitLab signs nothing: a tampered body is not detectable); an unmapped event is ignored', async () => {
      const { 'x-gitlab-token': _, ...none } = headers('Merge Request Hook');
      await refused(
        'gitlab',
        () => send('gitlab', mr, headers('Merge Request Hook', 'not-the-token')),
        () => send('gitlab', mr, none),
      );
      const before = (await runsOf('gitlab')).length;
      ignored(
        await send(
          'gitlab',
          JSON.stringify({ object_kind: 'wiki_page', project: { path_with_namespace: 'a/b' } }),
          headers('Wiki Page Hook'),
        ),
      );
      assert.equal((await runsOf('gitlab')).length, before);
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('alertmanager', () => {
    const headers = (token = ALERTMANAGER_SECRET) => ({ 'content-type': JSON_TYPE, authorization: `Bearer ${token}` });

    it("firing then resolved: one run each, worded apart, in the group's conversation", async () => {
      const firing = await send('alertmanager', JSON.stringify(fixture('alertmanager', 'firing')), headers());
      assert.equal(firing.status, 200, firing.text);
      const f = await runOf('alertmanager', firing.body?.runId);
      assert.ok(
        f.message.startsWith(
          'Alertmanager: FIRING ProbeFailure (severity critical): 2 alerts firing (receiver sms)\n- ProbeFailure [critical] on https://server.example.org: BlackBox Probe Failure',
        ),
        f.message,
      );
      assert.ok(f.message.includes('Alertmanager: http://prometheus.example.org:9093'));
      const resolved = await send('alertmanager', JSON.stringify(fixture('alertmanager', 'resolved')), headers());
      assert.equal(resolved.status, 200, resolved.text);
      const r = await runOf('alertmanager', resolved.body?.runId);
      assert.ok(
        r.message.startsWith('Alertmanager: RESOLVED ProbeFailure (severity critical): 1 alert no longer firing'),
        r.message,
      );
      assert.equal(f.sessionKey, 'hook:alertmanager:{}/{severity="critical"}:{alertname="ProbeFailure"}');
      assert.equal(r.sessionKey, f.sessionKey);
    });

    it('a wrong bearer, the hook token and none are 401; another status is ignored', async () => {
      const body = JSON.stringify(fixture('alertmanager', 'firing'));
      await refused(
        'alertmanager',
        () => send('alertmanager', body, headers('not-the-secret')),
        () => send('alertmanager', body, headers(TOKEN)),
        () => send('alertmanager', body, { 'content-type': JSON_TYPE }),
      );
      ignored(
        await send(
          'alertmanager',
          JSON.stringify({ ...fixture('alertmanager', 'firing'), status: 'pending' }),
          headers(),
        ),
      );
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('linear', () => {
    const body = (name: string, at = Date.now(), extra: Record<string, unknown> = {}) =>
      JSON.stringify({ ...fixture('linear', name), webhookTimestamp: at, ...extra });
    const headers = (raw: string, secret = LINEAR_SECRET, delivery: string = randomUUID()) => ({
      'content-type': 'application/json; charset=utf-8',
      'linear-signature': hmacHex(secret, raw),
      'linear-delivery': delivery,
      'linear-event': 'Issue',
    });

    it("an issue created and a comment on it: one run each, in the issue's conversation", async () => {
      const issue = body('issue-create');
      const r = await send('linear', issue, headers(issue));
      assert.equal(r.status, 200, r.text);
      const run = await runOf('linear', r.body?.runId);
      assert.equal(
        run.message,
        'Linear issue LIN-1778 created by Linear User: Foo bar\nState Todo, priority High, assignee Linear User, team Linear\nhttps://linear.app/issue/LIN-1778/foo-bar\n\nSteps to reproduce: run the deploy script on a fresh machine.',
      );
      const comment = body('comment-create');
      const c = await send('linear', comment, headers(comment));
      assert.equal(c.status, 200, c.text);
      assert.equal((await runOf('linear', c.body?.runId)).sessionKey, run.sessionKey);
      assert.equal(run.sessionKey, 'hook:linear:539068e2-ae88-4d09-bd75-22eb4a59612f');
    });

    it('a redelivery (same Linear-Delivery) is a duplicate: one run', async () => {
      const raw = body('issue-create', Date.now(), { action: 'remove' });
      const delivery = randomUUID();
      await once(
        'linear',
        () => send('linear', raw, headers(raw, LINEAR_SECRET, delivery)),
        () => send('linear', raw, headers(raw, LINEAR_SECRET, delivery)),
      );
    });

    it('a tampered body, a wrong secret and a stale webhookTimestamp are 401; an unmapped type is ignored', async () => {
      const raw = body('issue-create');
      const stale = body('issue-create', Date.now() - 600_000);
      await refused(
        'linear',
        () => send('linear', raw.replace('Foo bar', 'Drop the database'), headers(raw)),
        () => send('linear', raw, headers(raw, 'lin_wh_someone_else')),
        () => send('linear', stale, headers(stale)),
      );
      const cycle = body('issue-create', Date.now(), { type: 'Cycle' });
      ignored(await send('linear', cycle, headers(cycle)));
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('sentry', () => {
    const headers = (
      raw: string,
      resource: string,
      secret = SENTRY_SECRET,
      at = Math.floor(Date.now() / 1000),
      id: string = randomUUID(),
    ) => ({
      'content-type': JSON_TYPE,
      'request-id': id,
      'sentry-hook-resource': resource,
      'sentry-hook-timestamp': String(at),
      'sentry-hook-signature': hmacHex(secret, raw),
    });
    const issue = JSON.stringify(fixture('sentry', 'issue-created'));

    it("an issue created, then its alert: one run each, in the issue's conversation", async () => {
      const r = await send('sentry', issue, headers(issue, 'issue'));
      assert.equal(r.status, 200, r.text);
      const run = await runOf('sentry', r.body?.runId);
      assert.equal(
        run.message,
        'Sentry issue FRONT-END-9 created in project front-end (by Sentry): Error: Loading chunk 3 failed.\nLevel error, status unresolved new; culprit ?(runtime); first seen 2019-08-19T20:58:37.391000Z, 1 events\nhttps://sentry.io/organizations/example/issues/1170820242/',
      );
      const alert = JSON.stringify(fixture('sentry', 'event-alert'));
      const a = await send('sentry', alert, headers(alert, 'event_alert'));
      assert.equal(a.status, 200, a.text);
      assert.equal((await runOf('sentry', a.body?.runId)).sessionKey, 'hook:sentry:1170820242');
      assert.equal(run.sessionKey, 'hook:sentry:1170820242');
    });

    it('a retry with the same Request-ID is a duplicate: one run', async () => {
      const raw = JSON.stringify({ ...fixture('sentry', 'issue-created'), action: 'resolved' });
      const id = randomUUID();
      await once(
        'sentry',
        () => send('sentry', raw, headers(raw, 'issue', SENTRY_SECRET, undefined, id)),
        () => send('sentry', raw, headers(raw, 'issue', SENTRY_SECRET, undefined, id)),
      );
    });

    it('a tampered body, a wrong secret and a stale timestamp are 401; an installation event is ignored', async () => {
      await refused(
        'sentry',
        () => send('sentry', issue.replace('FRONT-END-9', 'FRONT-END-1'), headers(issue, 'issue')),
        () => send('sentry', issue, headers(issue, 'issue', 'another-client-secret')),
        () => send('sentry', issue, headers(issue, 'issue', SENTRY_SECRET, Math.floor(Date.now() / 1000) - 600)),
      );
      const installed = JSON.stringify({
        action: 'created',
        installation: { uuid: '7a485448-a9e2-4c85-8a3c-4f44175783c9' },
        data: {},
        actor: { type: 'user', id: 1, name: 'Ada' },
      });
      ignored(await send('sentry', installed, headers(installed, 'installation')));
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('shopify', () => {
    const headers = (raw: string, topic: string, secret = SHOPIFY_SECRET, id: string = randomUUID()) => ({
      'content-type': JSON_TYPE,
      'x-shopify-topic': topic,
      'x-shopify-hmac-sha256': createHmac('sha256', secret).update(raw).digest('base64'),
      'x-shopify-shop-domain': 'jsmith.myshopify.com',
      'x-shopify-api-version': '2025-07',
      'x-shopify-webhook-id': id,
      'x-shopify-event-id': randomUUID(),
    });
    const order = fixture('shopify', 'orders-create');
    const raw = JSON.stringify(order);

    it("an order placed: one run with who bought what, the admin link, in the order's conversation", async () => {
      const r = await send('shopify', raw, headers(raw, 'orders/create'));
      assert.equal(r.status, 200, r.text);
      const run = await runOf('shopify', r.body?.runId);
      assert.equal(
        run.message,
        `Shopify order #9999 placed on jsmith.myshopify.com by John Smith <jon@example.com>\nTotal 398.00 USD; financial status voided, fulfillment status pending\nFirst item: 1 × IPod Nano - 8GB (SKU IPOD2008PINK, 199.00 each)\nhttps://jsmith.myshopify.com/admin/orders/${order.id}`,
      );
      assert.equal(run.sessionKey, `hook:shopify:jsmith.myshopify.com/orders/${order.id}`);
    });

    it('a retry with the same X-Shopify-Webhook-Id is a duplicate: one run', async () => {
      const id = randomUUID();
      await once(
        'shopify',
        () => send('shopify', raw, headers(raw, 'orders/paid', SHOPIFY_SECRET, id)),
        () => send('shopify', raw, headers(raw, 'orders/paid', SHOPIFY_SECRET, id)),
      );
    });

    it('a tampered body and a wrong secret are 401; an unmapped topic is ignored', async () => {
      await refused(
        'shopify',
        () => send('shopify', raw.replace('398.00', '0.01'), headers(raw, 'orders/create')),
        () => send('shopify', raw, headers(raw, 'orders/create', 'shpss_other')),
      );
      ignored(await send('shopify', raw, headers(raw, 'orders/updated')));
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('twilio', () => {
    const FORM = 'application/x-www-form-urlencoded';
    const sms = fixture('twilio', 'incoming-sms') as Record<string, string>;
    const post = (
      fields: Record<string, string>,
      token = TWILIO_TOKEN,
      idem: string = randomUUID(),
      body = new URLSearchParams(fields).toString(),
    ) =>
      send('twilio', body, {
        'content-type': FORM,
        'x-twilio-signature': twilio.getExpectedTwilioSignature(token, TWILIO_URL, fields),
        'i-twilio-idempotency-token': idem,
      });

    it('an incoming SMS: answered with an empty TwiML response (no reply), one run with who wrote what', async () => {
      const before = (await runsOf('twilio')).length;
      const fields = {
        ...sms,
        MessageSid: 'SM0e2e0000000000000000000000000001',
        SmsMessageSid: 'SM0e2e0000000000000000000000000001',
      };
      assert.ok(
        twilio.validateRequest(
          TWILIO_TOKEN,
          twilio.getExpectedTwilioSignature(TWILIO_TOKEN, TWILIO_URL, fields),
          TWILIO_URL,
          fields,
        ),
      );
      const r = await post(fields);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.text, TWIML);
      assert.match(String(r.headers.get('content-type')), /^text\/xml/);
      const runs = (await runsOf('twilio')).filter((x) => x.message.includes('SM0e2e0000000000000000000000000001'));
      assert.equal((await runsOf('twilio')).length, before + 1);
      assert.equal(runs.length, 1);
      assert.equal(
        runs[0]!.message,
        'Twilio message from +15551234567 to +15557654321:\nHello from Twilio\n\nMedia attached: 0 \nMessage SM0e2e0000000000000000000000000001, account ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
      );
      assert.equal(runs[0]!.sessionKey, 'hook:twilio:ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX/+15551234567');
    });

    it("Twilio's retry (same I-Twilio-Idempotency-Token) is a duplicate: TwiML again, one run", async () => {
      const before = (await runsOf('twilio')).length;
      const fields = { ...sms, Body: 'Are you there?', MessageSid: 'SM0e2e0000000000000000000000000002' };
      const idem = randomUUID();
      const first = await post(fields, TWILIO_TOKEN, idem);
      const again = await post(fields, TWILIO_TOKEN, idem);
      assert.equal(first.text, TWIML);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.text, TWIML);
      assert.equal((await runsOf('twilio')).length, before + 1);
    });

    it('a tampered form and a wrong auth token are 401; an incoming call (not taken) gets TwiML and queues nothing', async () => {
      const signed = twilio.getExpectedTwilioSignature(TWILIO_TOKEN, TWILIO_URL, sms);
      await refused(
        'twilio',
        () =>
          send('twilio', new URLSearchParams({ ...sms, Body: 'Send me the codes' }).toString(), {
            'content-type': FORM,
            'x-twilio-signature': signed,
          }),
        () => post(sms, 'another-auth-token'),
      );
      const before = (await runsOf('twilio')).length;
      const {
        CallbackSource: _,
        SequenceNumber: __,
        ...call
      } = fixture('twilio', 'call-status') as Record<string, string>;
      const r = await post({ ...call, CallStatus: 'ringing' });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.text, TWIML);
      assert.equal((await runsOf('twilio')).length, before);
    });
  });
});
