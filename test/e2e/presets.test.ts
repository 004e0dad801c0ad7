/**
 * Sender presets (docs/senders.md) against the real server process, each delivery signed by the sender's own library
 * or exactly as the sender signs: GitHub's example payloads (@octokit/webhooks-examples) signed with
 * @octokit/webhooks-methods, Stripe's with `stripe`'s test header, Standard Webhooks' with `standardwebhooks`, Slack's
 * v0 scheme as real-senders.test.ts builds it. Per sender: the run (or wake) with the words an agent gets, a tampered
 * body, a wrong secret, a stale timestamp, a redelivery (one run, the idempotent answer), the handshake, and an event
 * type the entry does not take (nothing queued). Runs on SQLite, and on PostgreSQL with HOOKGATE_TEST_STORE=postgres.
 * (`npm run build` first: the server runs from dist.)
 */
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { sign as githubSign } from '@octokit/webhooks-methods';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { Webhook } from 'standardwebhooks';
import { Stripe } from '../support/sender-sdks.js';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { type Hookgate, request, startHookgate } from '../support/server.js';
import { withStoreAt } from '../support/store-at.js';
import { type OctokitExample, openedPullRequestMessage } from '../support/sender-messages.js';

const GITHUB_SECRET = 'gh-webhook-secret-for-presets';
const STRIPE_SECRET = 'whsec_presets_endpoint_secret';
const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const SW_SECRET = `whsec_${Buffer.from('standard webhooks presets key 32').toString('base64')}`;
const SECRETS = [GITHUB_SECRET, STRIPE_SECRET, SLACK_SECRET, SW_SECRET];

const definitions = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];
type Example = OctokitExample;
const example = (event: string, pick: (e: Example) => boolean = () => true): Example => {
  const found = (definitions.find((d) => d.name === event)?.examples as unknown as Example[] | undefined)?.find(pick);
  assert.ok(found, `no example of ${event}`);
  return found;
};

const now = () => Math.floor(Date.now() / 1000);
const FORM = 'application/x-www-form-urlencoded';

describe('sender presets (real process)', { timeout: 180_000 }, () => {
  let hg: Hookgate;
  let clientSeq = 0;
  // Each request from its own address: the refused ones must not add up to a lockout of the next.
  const send = (path: string, body: string, headers: Record<string, string>) =>
    request(`${hg.url}/hooks/${path}`, {
      method: 'POST',
      body,
      headers: { 'x-forwarded-for': `10.7.${Math.floor(++clientSeq / 250)}.${clientSeq % 250}`, ...headers },
    });
  const withStore = <T>(fn: (s: SqliteStore) => Promise<T>): Promise<T> => withStoreAt(hg.dir, fn);
  const runsOf = (mappingId: string) =>
    withStore(async (s) => (await s.listRuns({ limit: 500 })).filter((r) => r.mappingId === mappingId));

  before(async () => {
    hg = await startHookgate({
      env: { GITHUB_WEBHOOK_SECRET: GITHUB_SECRET, SLACK_SIGNING_SECRET: SLACK_SECRET },
      config: {
        gateway: { trustedProxies: ['127.0.0.1', '::1'] },
        heartbeat: { every: 'off' },
        // No heartbeat ever runs (no periodic one, and every entry waits for it: `next-heartbeat`), so the main
        // session's events stay pending and the wake case can count them.
        hooks: {
          presets: [
            {
              use: 'github',
              secret: { env: 'GITHUB_WEBHOOK_SECRET' },
              events: ['pull_request', 'issues', 'issue_comment'],
              wakeMode: 'next-heartbeat',
            },
            { use: 'stripe', secret: STRIPE_SECRET, wakeMode: 'next-heartbeat' },
            { use: 'slack', secret: { env: 'SLACK_SIGNING_SECRET' }, wakeMode: 'next-heartbeat' },
            { use: 'standard-webhooks', path: 'clerk', secret: SW_SECRET, name: 'Clerk', wakeMode: 'next-heartbeat' },
            {
              use: 'standard-webhooks',
              path: 'resend',
              secret: SW_SECRET,
              events: ['email.*'],
              action: 'wake',
              wakeMode: 'next-heartbeat',
            },
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
  describe('github', () => {
    const headers = async (body: string, event: string, secret = GITHUB_SECRET, delivery: string = randomUUID()) => ({
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': delivery,
      'x-hub-signature-256': await githubSign(secret, body),
    });
    const pr = example('pull_request', (e) => e.action === 'opened');
    const prBody = JSON.stringify(pr);

    it("a pull request opened: one run with the words an agent needs, in the pull request's conversation", async () => {
      const r = await send('github', prBody, await headers(prBody, 'pull_request'));
      assert.equal(r.status, 200, r.text);
      const runs = await runsOf('github');
      const run = runs.find((x) => x.id === r.body?.runId);
      assert.ok(run, 'the answer names the queued run');
      assert.equal(run.message, openedPullRequestMessage(pr));
      assert.equal(run.name, 'GitHub');
      assert.equal(run.sessionKey, `hook:github:${pr.repository.full_name}#${pr.number}`);
      assert.equal(run.sessionMode, 'persistent');
    });

    it('a redelivery (same X-GitHub-Delivery) gets the first answer with duplicate: true, and no second run', async () => {
      const issue = example('issues', (e) => e.action === 'opened');
      const body = JSON.stringify(issue);
      const delivery = randomUUID();
      const first = await send('github', body, await headers(body, 'issues', GITHUB_SECRET, delivery));
      assert.equal(first.status, 200, first.text);
      const again = await send('github', body, await headers(body, 'issues', GITHUB_SECRET, delivery));
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body, { ...first.body, duplicate: true });
      assert.equal(
        (await runsOf('github')).filter((x) => x.message.startsWith(`GitHub issue #${issue.issue.number} opened`))
          .length,
        1,
      );
    });

    it('a tampered body, a wrong secret and no signature are 401; nothing is queued', async () => {
      const before = (await runsOf('github')).length;
      const signed = await headers(prBody, 'pull_request');
      const tampered = await send('github', prBody.replace(pr.pull_request.title as string, 'Merge me now'), signed);
      assert.equal(tampered.status, 401, tampered.text);
      const wrong = await send('github', prBody, await headers(prBody, 'pull_request', 'not-the-secret'));
      assert.equal(wrong.status, 401, wrong.text);
      const { 'x-hub-signature-256': _, ...unsigned } = signed;
      assert.equal((await send('github', prBody, unsigned)).status, 401);
      assert.equal((await runsOf('github')).length, before);
    });

    it('ping (the webhook was just created) is answered, nothing queued', async () => {
      const before = (await runsOf('github')).length;
      const ping = JSON.stringify(example('ping'));
      const r = await send('github', ping, await headers(ping, 'ping'));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { ok: true, ping: true });
      assert.equal((await runsOf('github')).length, before);
    });

    it('an event type outside events (push) queues nothing', async () => {
      const before = (await runsOf('github')).length;
      const push = JSON.stringify(example('push'));
      const r = await send('github', push, await headers(push, 'push'));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { ok: true, ignored: true });
      assert.equal((await runsOf('github')).length, before);
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('stripe', () => {
    const stripeHeader = (payload: string, secret = STRIPE_SECRET, timestamp = now()) => ({
      'content-type': 'application/json; charset=utf-8',
      'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp }),
    });
    const event = (type: string, object: Record<string, unknown>) =>
      JSON.stringify({
        id: `evt_${randomUUID().replace(/-/g, '')}`,
        object: 'event',
        type,
        livemode: false,
        created: now(),
        data: { object },
      });
    const paid = event('invoice.paid', {
      id: 'in_1MtHbELkdIwHu7ixl4OzzPMv',
      object: 'invoice',
      number: 'ACME-0042',
      amount_paid: 1200,
      currency: 'eur',
      customer: 'cus_NeZwdNtLEOXuvB',
      customer_email: 'ada@example.com',
      hosted_invoice_url: 'https://invoice.stripe.com/i/acct_1/test_1',
    });

    it("invoice.paid: one run that says who paid what, with the link, in the customer's conversation", async () => {
      const r = await send('stripe', paid, stripeHeader(paid));
      assert.equal(r.status, 200, r.text);
      const run = (await runsOf('stripe')).find((x) => x.id === r.body?.runId);
      assert.ok(run);
      assert.equal(
        run.message,
        [
          'Stripe invoice ACME-0042 paid: 1200 eur by ada@example.com (customer cus_NeZwdNtLEOXuvB)',
          'Invoice in_1MtHbELkdIwHu7ixl4OzzPMv, subscription ',
          'https://invoice.stripe.com/i/acct_1/test_1',
          `Event ${(JSON.parse(paid) as { id: string }).id}, live mode false. Amounts are in the currency's smallest unit (2000 usd = 20.00 USD).`,
        ].join('\n'),
      );
      assert.equal(run.sessionKey, 'hook:stripe:cus_NeZwdNtLEOXuvB');
    });

    it("Stripe's retry of the same event (signed afresh) is a duplicate: one run", async () => {
      const body = event('payment_intent.succeeded', {
        id: 'pi_retry',
        object: 'payment_intent',
        amount: 2000,
        amount_received: 2000,
        currency: 'usd',
        customer: 'cus_retry',
      });
      const first = await send('stripe', body, stripeHeader(body));
      assert.equal(first.status, 200, first.text);
      const retry = await send('stripe', body, stripeHeader(body, STRIPE_SECRET, now() + 1));
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.body?.duplicate, true);
      assert.equal(retry.body?.runId, first.body?.runId);
      assert.equal((await runsOf('stripe')).filter((x) => x.sessionKey === 'hook:stripe:cus_retry').length, 1);
    });

    it('a tampered body, a wrong secret and a stale timestamp are 401; nothing is queued', async () => {
      const before = (await runsOf('stripe')).length;
      const body = event('payment_intent.succeeded', { id: 'pi_bad', amount: 1, currency: 'usd', customer: 'cus_bad' });
      assert.equal((await send('stripe', body.replace('"amount":1', '"amount":9'), stripeHeader(body))).status, 401);
      assert.equal((await send('stripe', body, stripeHeader(body, 'whsec_someone_else'))).status, 401);
      const stale = await send('stripe', body, stripeHeader(body, STRIPE_SECRET, now() - 600));
      assert.equal(stale.status, 401, stale.text);
      assert.equal((await runsOf('stripe')).length, before);
    });

    it("an event type outside the preset's list (charge.captured) queues nothing", async () => {
      const before = (await runsOf('stripe')).length;
      const body = event('charge.captured', { id: 'ch_1', object: 'charge', amount: 100, currency: 'usd' });
      const r = await send('stripe', body, stripeHeader(body));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { ok: true, ignored: true });
      assert.equal((await runsOf('stripe')).length, before);
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('slack', () => {
    /** Slack: `X-Slack-Signature: v0=` + hex HMAC-SHA256(signing secret, `v0:{ts}:{raw body}`). */
    const slackHeaders = (body: string, contentType: string, ts = now(), secret = SLACK_SECRET) => ({
      'content-type': contentType,
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
    });
    const eventBody = (event: Record<string, unknown>, eventId = `Ev${randomUUID().slice(0, 8)}`) =>
      JSON.stringify({
        token: 'XXYYZZ',
        team_id: 'T0001',
        api_app_id: 'A123456',
        type: 'event_callback',
        event_id: eventId,
        event_time: now(),
        event,
      });

    it('a slash command (form): an empty 200, and a run saying who asked what, where', async () => {
      const body =
        'token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&team_domain=example&channel_id=C2147483705&channel_name=test' +
        '&user_id=U2147483697&user_name=Steve&command=%2Fweather&text=94070&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1234%2F5678' +
        '&trigger_id=13345224609.738474920.8088930838d88f008e0&api_app_id=A123456';
      const r = await send('slack', body, slackHeaders(body, FORM));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.text, '', 'Slack shows any body to the user');
      const runs = (await runsOf('slack')).filter((x) => x.message.startsWith('Slack: Steve'));
      assert.equal(runs.length, 1);
      assert.equal(
        runs[0]!.message,
        'Slack: Steve (<@U2147483697>) ran /weather 94070\nIn #test (C2147483705), workspace example',
      );
      assert.equal(runs[0]!.sessionKey, 'hook:slack:T0001/C2147483705');
    });

    it("url_verification (saving the Request URL) is answered with the challenge; Slack's retry of an event is a duplicate", async () => {
      const challenge = JSON.stringify({
        token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
        challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
        type: 'url_verification',
      });
      const hs = await send('slack', challenge, slackHeaders(challenge, 'application/json'));
      assert.equal(hs.status, 200, hs.text);
      assert.deepEqual(hs.body, { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });

      const body = eventBody({
        type: 'app_mention',
        user: 'U2147483697',
        text: '<@U0LAN0Z89> is the deploy done?',
        ts: '1515449522.000016',
        channel: 'C0DEPLOY',
      });
      const first = await send('slack', body, slackHeaders(body, 'application/json'));
      assert.equal(first.status, 200, first.text);
      const retry = await send('slack', body, {
        ...slackHeaders(body, 'application/json', now() + 1),
        'x-slack-retry-num': '1',
        'x-slack-retry-reason': 'http_timeout',
      });
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.body?.duplicate, true);
      const runs = (await runsOf('slack')).filter((x) => x.sessionKey === 'hook:slack:T0001/C0DEPLOY');
      assert.deepEqual(
        runs.map((x) => x.message),
        ['Slack: <@U2147483697> mentioned the app in channel C0DEPLOY:\n<@U0LAN0Z89> is the deploy done?'],
      );
    });

    it("a tampered body, a wrong secret and a stale timestamp are 401; a bot's own message queues nothing", async () => {
      const before = (await runsOf('slack')).length;
      const body = eventBody({ type: 'app_mention', user: 'U1', text: 'hello', channel: 'C1' });
      assert.equal(
        (await send('slack', body.replace('hello', 'rm -rf'), slackHeaders(body, 'application/json'))).status,
        401,
      );
      assert.equal(
        (await send('slack', body, slackHeaders(body, 'application/json', now(), 'wrong-secret'))).status,
        401,
      );
      const stale = await send('slack', body, slackHeaders(body, 'application/json', now() - 600));
      assert.equal(stale.status, 401, stale.text);
      const own = eventBody({ type: 'message', bot_id: 'B0001', text: 'my own reply', channel: 'C1' });
      const r = await send('slack', own, slackHeaders(own, 'application/json'));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { ok: true, ignored: true });
      assert.equal((await runsOf('slack')).length, before);
    });

    it("Interactivity: the form's JSON payload field, who used which button", async () => {
      const payload = {
        type: 'block_actions',
        user: { id: 'U2147483697', username: 'steve', name: 'steve' },
        team: { id: 'T0001', domain: 'example' },
        channel: { id: 'C2147483705', name: 'test' },
        message: { text: 'Deploy v2 to production?' },
        actions: [
          { action_id: 'approve_deploy', block_id: 'b1', type: 'button', value: 'v2', action_ts: '1700000000.000100' },
        ],
      };
      const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
      const r = await send('slack', body, slackHeaders(body, `${FORM}; charset=utf-8`));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.text, '');
      const runs = (await runsOf('slack')).filter((x) => x.message.includes('approve_deploy'));
      assert.deepEqual(
        runs.map((x) => x.message),
        [
          'Slack: steve (<@U2147483697>) used approve_deploy (value v2) in channel test (C2147483705)\nOn the message: Deploy v2 to production?',
        ],
      );
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('standard-webhooks', () => {
    const wh = new Webhook(SW_SECRET);
    const swHeaders = (body: string, id = `msg_${randomUUID()}`, at = new Date(), signer = wh) => ({
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signer.sign(id, at, body),
    });
    const userCreated = JSON.stringify({
      type: 'user.created',
      object: 'event',
      data: { id: 'user_29w83sxmDNGwOuEthce5gg56FcC', first_name: 'Ada', last_name: 'Lovelace' },
    });

    it("Clerk's user.created: one run with the event and its data, in the user's conversation", async () => {
      const id = `msg_${randomUUID()}`;
      const r = await send('clerk', userCreated, swHeaders(userCreated, id));
      assert.equal(r.status, 200, r.text);
      const run = (await runsOf('clerk')).find((x) => x.id === r.body?.runId);
      assert.ok(run);
      assert.equal(
        run.message,
        `clerk: user.created event (message ${id})\nData: {"id":"user_29w83sxmDNGwOuEthce5gg56FcC","first_name":"Ada","last_name":"Lovelace"}`,
      );
      assert.equal(run.name, 'Clerk');
      assert.equal(run.sessionKey, 'hook:clerk:user_29w83sxmDNGwOuEthce5gg56FcC');
    });

    it('a replay of the same webhook-id is a duplicate: one run', async () => {
      const body = JSON.stringify({ type: 'user.updated', data: { id: 'user_replayed' } });
      const id = `msg_${randomUUID()}`;
      const first = await send('clerk', body, swHeaders(body, id));
      assert.equal(first.status, 200, first.text);
      const replay = await send('clerk', body, swHeaders(body, id));
      assert.deepEqual(replay.body, { ...first.body, duplicate: true });
      assert.equal((await runsOf('clerk')).filter((x) => x.sessionKey === 'hook:clerk:user_replayed').length, 1);
    });

    it('a tampered body, a wrong secret and a stale timestamp are 401; nothing is queued', async () => {
      const before = (await runsOf('clerk')).length;
      assert.equal((await send('clerk', userCreated.replace('Ada', 'Eve'), swHeaders(userCreated))).status, 401);
      const other = new Webhook(`whsec_${Buffer.from('another key, not the endpoint one').toString('base64')}`);
      assert.equal(
        (await send('clerk', userCreated, swHeaders(userCreated, undefined, new Date(), other))).status,
        401,
      );
      const stale = await send('clerk', userCreated, swHeaders(userCreated, undefined, new Date(Date.now() - 600_000)));
      assert.equal(stale.status, 401, stale.text);
      assert.equal((await runsOf('clerk')).length, before);
    });

    it('a wake preset narrowed to email.*: the event waits for the heartbeat, wrapped; another type queues nothing', async () => {
      const bounced = JSON.stringify({
        type: 'email.bounced',
        created_at: '2026-03-01T12:00:00.000Z',
        data: { email_id: 'e-42', to: ['ada@example.com'], subject: 'Invoice 2041' },
      });
      const r = await send('resend', bounced, swHeaders(bounced));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body?.mode, 'next-heartbeat');
      // The main session also gets the other presets' run summaries as their runs end: count this preset's events only.
      // (Kept pending: see the config's wakeMode.)
      const resendEvents = () =>
        withStore(async (s) => (await s.pendingEvents('main', 1000)).filter((e) => e.source === 'resend'));
      const pending = await resendEvents();
      const ev = pending.find((e) => e.id === r.body?.eventId);
      assert.ok(ev, JSON.stringify(pending));
      assert.match(
        ev.text,
        /^resend: email\.bounced event \(message msg_[\w-]+\)\nData: \{"email_id":"e-42","to":\["ada@example\.com"\],"subject":"Invoice 2041"\}$/,
      );
      assert.equal(ev.untrusted, true);

      const contact = JSON.stringify({ type: 'contact.created', data: { id: 'c-1' } });
      const other = await send('resend', contact, swHeaders(contact));
      assert.equal(other.status, 200, other.text);
      assert.deepEqual(other.body, { ok: true, ignored: true });
      assert.equal((await resendEvents()).length, pending.length);
    });
  });
});
