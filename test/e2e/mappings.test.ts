/**
 * Mapped hooks against the real server process: real senders' signatures computed the way each provider computes
 * them, the gmail preset's fan-out and body allowance, transforms on disk, delivery-id idempotency, and what ends up
 * in the store. (`npm run build` first: the server runs from dist.)
 */
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { type Hookgate, request, startHookgate, TOKEN } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { openStoreAt } from '../support/runtime-kit.js';

const GITHUB_SECRET = "It's a Secret to Everybody";
const STRIPE_SECRET = 'whsec_test_stripe_0123456789';
const SW_OLD = `whsec_${Buffer.from('old-standard-webhooks-key-123456').toString('base64')}`;
const SW_NEW = `whsec_${Buffer.from('new-standard-webhooks-key-654321').toString('base64')}`;
const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const SHOP_SECRET = 'shopify-app-secret';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data);
const nowS = () => Math.floor(Date.now() / 1000);

/** Distinct client addresses (the server trusts X-Forwarded-For from loopback), so limiter tests stay independent. */
let clientSeq = 0;
const client = () => ({ 'x-forwarded-for': `10.1.${Math.floor(++clientSeq / 250)}.${clientSeq % 250}` });

describe('mapped hooks (real process)', () => {
  let dir: string;
  let hg: Hookgate;

  /** POST without the shared token (signed senders do not have it). */
  const send = (path: string, body: string, headers: Record<string, string> = {}) =>
    request(`${hg.url}${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...client(), ...headers },
    });

  const withStore = async <T>(fn: (s: SqliteStore) => Promise<T>): Promise<T> => {
    const store = openStoreAt(dir);
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  };

  /** Texts of the main session's recent events (pending or already consumed by a heartbeat of the runtime). */
  const pendingTexts = () =>
    withStore(async (s) => {
      const main = await s.getSession('main');
      return [...(main?.pending ?? []), ...(main?.recentEvents ?? [])].map((e) => e.text);
    });

  before(async () => {
    dir = tempDir('hookgate-e2e-mappings-');
    const transforms = join(dir, 'hooks/transforms');
    mkdirSync(transforms, { recursive: true });
    writeFileSync(
      join(transforms, 'alerts.mjs'),
      [
        '// Only firing alerts wake anyone; resolved ones are dropped (204).',
        'export default function ({ payload }) {',
        '  if (payload.status !== "firing") return null;',
        '  const names = (payload.alerts ?? []).map((a) => a.labels?.alertname).filter(Boolean);',
        '  return { message: `Firing: ${names.join(", ")}`, name: "Alerts" };',
        '}',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(transforms, 'broken.mjs'),
      'export default ({ payload }) => { throw new Error(`cannot handle ${payload.secretValue}`); };\n',
    );
    writeFileSync(
      join(transforms, 'pr-filter.ts'),
      [
        'interface Input { payload: { action?: string; number?: number }; headers: Record<string, string> }',
        'export function onPullRequest({ payload, headers }: Input) {',
        '  if (headers["x-github-event"] !== "pull_request" || payload.action !== "opened") return null;',
        '  return { sessionKey: `hook:github:pr:${payload.number}` };',
        '}',
        '',
      ].join('\n'),
    );

    hg = await startHookgate({
      dir,
      config: {
        gateway: { trustedProxies: ['127.0.0.1', '::1'] },
        hooks: {
          presets: ['gmail'],
          allowRequestSessionKey: true,
          allowedSessionKeyPrefixes: ['hook:'],
          maxFanOut: 3,
          authFailureLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 30 },
          mappings: [
            {
              id: 'github',
              match: { path: 'github' },
              name: 'GitHub',
              sessionKey: 'hook:github:{{repository.full_name}}#{{pull_request.number}}',
              messageTemplate: 'PR #{{pull_request.number}} {{action}} by {{sender.login}}: {{pull_request.title}}',
              signature: { scheme: 'github', secret: GITHUB_SECRET },
            },
            {
              id: 'github-ts',
              match: { path: 'github-prs' },
              messageTemplate: 'New PR #{{number}}',
              transform: { module: 'pr-filter.ts', export: 'onPullRequest' },
              signature: { scheme: 'github', secret: GITHUB_SECRET },
            },
            {
              id: 'stripe',
              match: { path: 'stripe' },
              action: 'wake',
              textTemplate: 'Stripe {{type}}: {{data.object.amount}} {{data.object.currency}}',
              signature: { scheme: 'stripe', secret: STRIPE_SECRET },
            },
            {
              id: 'svix',
              match: { path: 'svix' },
              action: 'wake',
              wakeMode: 'next-heartbeat',
              textTemplate: 'Standard webhook {{type}} for {{data.customer}}',
              signature: { scheme: 'standard-webhooks', secrets: [SW_OLD, SW_NEW] },
            },
            {
              id: 'slack',
              match: { path: 'slack' },
              action: 'wake',
              textTemplate: 'Slack {{event.type}} in {{event.channel}}: {{event.text}}',
              signature: { scheme: 'slack', secret: SLACK_SECRET },
            },
            {
              id: 'shop',
              match: { path: 'shop' },
              name: 'Shop',
              messageTemplate: 'Order {{name}} for {{total_price}} {{currency}}',
              signature: {
                scheme: 'hmac-sha256',
                secret: SHOP_SECRET,
                header: 'X-Shopify-Hmac-Sha256',
                encoding: 'base64',
              },
            },
            { id: 'alerts', match: { path: 'alerts' }, transform: { module: 'alerts.mjs' } },
            { id: 'broken', match: { path: 'broken' }, messageTemplate: 'm', transform: { module: 'broken.mjs' } },
            {
              id: 'keyed',
              match: { path: 'keyed' },
              messageTemplate: '{{msg}}',
              sessionKey: '{{key}}',
              channel: '{{channel}}',
              model: '{{model}}',
            },
            {
              id: 'home-assistant',
              match: { path: 'homeassistant' },
              action: 'wake',
              textTemplate: 'Home Assistant: {{friendly_name}} is {{state}}',
            },
          ],
        },
      },
    });
  });
  after(async () => {
    await hg?.cleanup();
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('GitHub (X-Hub-Signature-256)', () => {
    const pr = (n: number, action = 'opened') =>
      JSON.stringify({
        action,
        number: n,
        pull_request: { number: n, title: `Make hooks faster ${n}`, html_url: `https://github.com/acme/app/pull/${n}` },
        repository: { full_name: 'acme/app' },
        sender: { login: 'octocat' },
      });
    const headers = (body: string, delivery = randomUUID()) => ({
      'x-github-event': 'pull_request',
      'x-github-delivery': delivery,
      'x-hub-signature-256': `sha256=${hmac(GITHUB_SECRET, body).digest('hex')}`,
    });

    it('a signed pull-request event becomes an agent run, without the hook token', async () => {
      const body = pr(42);
      const r = await send('/hooks/github', body, headers(body));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(Object.keys(r.body ?? {}).sort(), ['ok', 'runId']);
      const run = await withStore((s) => s.getRun(String(r.body?.runId)));
      assert.ok(run);
      assert.equal(run.message, 'PR #42 opened by octocat: Make hooks faster 42');
      assert.equal(run.name, 'GitHub');
      assert.equal(run.sessionKey, 'hook:github:acme/app#42');
      assert.equal(run.mappingId, 'github');
      assert.equal(run.hookPath, 'github');
      assert.equal(run.contentSource, 'webhook');
    });

    it('the same X-GitHub-Delivery twice → the first answer again with duplicate: true, one run', async () => {
      const body = pr(43);
      const h = headers(body);
      const a = await send('/hooks/github', body, h);
      const b = await send('/hooks/github', body, h);
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.equal(b.body?.runId, a.body?.runId);
      assert.equal(b.body?.duplicate, true);
      const runs = await withStore((s) => s.listRuns({ sessionKey: 'hook:github:acme/app#43' }));
      assert.equal(runs.length, 1);
    });

    it('an explicit Idempotency-Key wins over the delivery id', async () => {
      const body = pr(44);
      const a = await send('/hooks/github', body, { ...headers(body), 'idempotency-key': 'explicit-44' });
      const b = await send('/hooks/github', body, { ...headers(body), 'idempotency-key': 'explicit-44' }); // new delivery id
      assert.equal(b.body?.duplicate, true);
      assert.equal(b.body?.runId, a.body?.runId);
    });

    it('a valid hook token does not replace the signature on a signed path', async () => {
      const r = await send('/hooks/github', pr(45), {
        authorization: `Bearer ${TOKEN}`,
        'x-github-delivery': randomUUID(),
      });
      assert.equal(r.status, 401);
      assert.equal(r.body?.code, 'unauthorized');
    });

    it('a bad signature is 401 and counts toward the limiter: 429 with Retry-After once locked; the reason is logged', async () => {
      const ip = { 'x-forwarded-for': '10.200.0.1' };
      const body = pr(46);
      const bad = {
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${hmac('not the secret', body).digest('hex')}`,
        ...ip,
      };
      for (let i = 0; i < 3; i++) {
        const r = await request(`${hg.url}/hooks/github`, { method: 'POST', body, headers: bad });
        assert.equal(r.status, 401, `attempt ${i + 1}`);
        assert.equal(r.body?.error, 'missing or invalid signature');
      }
      const locked = await request(`${hg.url}/hooks/github`, { method: 'POST', body, headers: bad });
      assert.equal(locked.status, 429);
      assert.equal(locked.body?.code, 'rate_limited');
      assert.ok(Number(locked.headers.get('retry-after')) >= 1);
      // Locked out: refused before the body is read, so even a delivery that would verify waits
      // out the lockout (senders retry a 429); the connection is closed so no body is uploaded.
      const good = await request(`${hg.url}/hooks/github`, {
        method: 'POST',
        body,
        headers: { ...headers(body), ...ip },
      });
      assert.equal(good.status, 429, 'the lockout is checked before the body, so before its signature');
      assert.equal(good.headers.get('connection'), 'close');
      // Another address is not locked: its verified delivery is accepted.
      const other = await request(`${hg.url}/hooks/github`, {
        method: 'POST',
        body,
        headers: { ...headers(body), 'x-forwarded-for': '10.200.0.2' },
      });
      assert.equal(other.status, 200);
      const line = await hg.waitForLog((l) => l.msg === 'hook github rejected: github signature signature mismatch');
      assert.equal(line.level, 40);
      assert.ok(!JSON.stringify(hg.logs).includes(GITHUB_SECRET));
    });

    it('a body that is not JSON: 401 unless a signature verifies it, then 400 invalid_json', async () => {
      // Signed mappings accept form bodies, so the non-JSON body here is plain text (was a form).
      const text = 'action=opened but not a form';
      const unsigned = await send('/hooks/github', text, { 'content-type': 'text/plain' });
      assert.equal(unsigned.status, 401);
      const signed = await send('/hooks/github', text, { 'content-type': 'text/plain', ...headers(text) });
      assert.equal(signed.status, 400);
      assert.equal(signed.body?.code, 'invalid_json');
    });

    it('a TypeScript transform with a named export filters events on a signed path', async () => {
      const opened = JSON.stringify({ action: 'opened', number: 7 });
      const closed = JSON.stringify({ action: 'closed', number: 7 });
      const skip = await send('/hooks/github-prs', closed, headers(closed));
      assert.equal(skip.status, 204);
      const r = await send('/hooks/github-prs', opened, headers(opened));
      assert.equal(r.status, 200, r.text);
      const run = await withStore((s) => s.getRun(String(r.body?.runId)));
      assert.equal(run?.message, 'New PR #7');
      assert.equal(run?.sessionKey, 'hook:github:pr:7');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('Stripe (Stripe-Signature)', () => {
    const event = (id: string, amount: number) =>
      JSON.stringify({
        id,
        object: 'event',
        type: 'payment_intent.succeeded',
        data: { object: { id: 'pi_1', amount, currency: 'usd' } },
      });
    const sig = (body: string, t = nowS()) => ({
      'stripe-signature': `t=${t},v1=${hmac(STRIPE_SECRET, `${t}.${body}`).digest('hex')}`,
    });

    it('a signed payment event becomes a wake; the event id dedupes retries', async () => {
      const body = event('evt_e2e_1', 2000);
      const r = await send('/hooks/stripe', body, sig(body));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body?.ok, true);
      assert.equal(r.body?.mode, 'now');
      assert.match(String(r.body?.eventId), UUID);
      assert.equal(r.body?.eventOutcome, 'queued');
      assert.ok((await pendingTexts()).includes('Stripe payment_intent.succeeded: 2000 usd'));
      const again = await send('/hooks/stripe', body, sig(body, nowS() - 5));
      assert.equal(again.body?.duplicate, true);
      assert.equal(again.body?.eventId, r.body?.eventId);
    });

    it('a timestamp outside the tolerance is 401 (replay protection)', async () => {
      const body = event('evt_e2e_old', 5);
      const r = await send('/hooks/stripe', body, sig(body, nowS() - 3600));
      assert.equal(r.status, 401);
      await hg.waitForLog((l) => l.msg === 'hook stripe rejected: stripe signature timestamp outside tolerance');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('Standard Webhooks, Slack, generic HMAC', () => {
    it('standard-webhooks: the rotated-in secret verifies; webhook-id dedupes', async () => {
      const body = JSON.stringify({ type: 'invoice.paid', data: { customer: 'cus_9' } });
      const id = `msg_${randomUUID()}`;
      const ts = String(nowS());
      const key = Buffer.from(SW_NEW.slice('whsec_'.length), 'base64');
      const signature = `v1,${hmac(key, `${id}.${ts}.${body}`).digest('base64')}`;
      const h = {
        'webhook-id': id,
        'webhook-timestamp': ts,
        'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')} ${signature}`,
      };
      const r = await send('/hooks/svix', body, h);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body?.mode, 'next-heartbeat');
      assert.ok((await pendingTexts()).includes('Standard webhook invoice.paid for cus_9'));
      assert.equal((await send('/hooks/svix', body, h)).body?.duplicate, true);
    });

    it('slack: v0 signature over "v0:<timestamp>:<body>"', async () => {
      const body = JSON.stringify({
        type: 'event_callback',
        event: { type: 'message', channel: 'C123', text: 'deploy done' },
      });
      const ts = String(nowS());
      const r = await send('/hooks/slack', body, {
        'x-slack-request-timestamp': ts,
        'x-slack-signature': `v0=${hmac(SLACK_SECRET, `v0:${ts}:${body}`).digest('hex')}`,
      });
      assert.equal(r.status, 200, r.text);
      assert.ok((await pendingTexts()).includes('Slack message in C123: deploy done'));
      const wrong = await send('/hooks/slack', body, {
        'x-slack-request-timestamp': ts,
        'x-slack-signature': `v0=${'0'.repeat(64)}`,
      });
      assert.equal(wrong.status, 401);
    });

    it('hmac-sha256: a Shopify-style base64 header', async () => {
      const body = JSON.stringify({ name: '#1001', total_price: '19.90', currency: 'EUR' });
      const r = await send('/hooks/shop', body, { 'X-Shopify-Hmac-Sha256': hmac(SHOP_SECRET, body).digest('base64') });
      assert.equal(r.status, 200, r.text);
      const run = await withStore((s) => s.getRun(String(r.body?.runId)));
      assert.equal(run?.message, 'Order #1001 for 19.90 EUR');
      assert.equal(run?.name, 'Shop');
      const tampered = await send('/hooks/shop', body.replace('19.90', '0.01'), {
        'X-Shopify-Hmac-Sha256': hmac(SHOP_SECRET, body).digest('base64'),
      });
      assert.equal(tampered.status, 401);
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('gmail preset', () => {
    const msg = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      from: `${id}@example.com`,
      subject: `Subject ${id}`,
      snippet: `snippet ${id}`,
      body: `body ${id}`,
      ...extra,
    });

    it('fans out one run per message: { ok, runId, runIds, dispatched }', async () => {
      const r = await hg.post('/hooks/gmail', { source: 'gmail', messages: [msg('g1'), msg('g2')] });
      assert.equal(r.status, 200, r.text);
      const runIds = r.body?.runIds as string[];
      assert.equal(runIds.length, 2);
      assert.equal(r.body?.runId, runIds[0]);
      assert.equal(r.body?.dispatched, 2);
      assert.equal(r.body?.dropped, undefined);
      const runs = await withStore((s) => Promise.all(runIds.map((id) => s.getRun(id))));
      assert.deepEqual(
        runs.map((x) => x?.sessionKey),
        ['hook:gmail:g1', 'hook:gmail:g2'],
      );
      assert.equal(runs[1]?.message, 'New email from g2@example.com\nSubject: Subject g2\nsnippet g2\nbody g2');
      for (const run of runs) {
        assert.equal(run?.name, 'Gmail');
        assert.equal(run?.contentSource, 'email');
        assert.equal(run?.mappingId, 'gmail');
      }
    });

    it('over hooks.maxFanOut: the first ones are dispatched, the rest dropped and counted', async () => {
      const r = await hg.post('/hooks/gmail', { messages: [msg('c1'), msg('c2'), msg('c3'), msg('c4'), msg('c5')] });
      assert.equal(r.status, 200);
      assert.equal((r.body!.runIds as string[]).length, 3);
      assert.equal(r.body?.dispatched, 3);
      assert.equal(r.body?.dropped, 2);
      await hg.waitForLog((l) => l.level === 40 && l.dropped === 2);
    });

    it('an empty batch is 204', async () => {
      assert.equal((await hg.post('/hooks/gmail', { messages: [] })).status, 204);
      assert.equal((await hg.post('/hooks/gmail', {})).status, 204);
    });

    it('a body over 256 KiB is accepted on /hooks/gmail only (413 on /hooks/agent)', async () => {
      const big = 'x'.repeat(300 * 1024);
      const r = await hg.post('/hooks/gmail', { messages: [msg('big', { body: big })] });
      assert.equal(r.status, 200, r.text.slice(0, 200));
      const run = await withStore((s) => s.getRun((r.body!.runIds as string[])[0]!));
      assert.ok(run?.message.endsWith(big));
      const agent = await hg.post('/hooks/agent', { message: big });
      assert.equal(agent.status, 413);
      assert.equal(agent.body?.code, 'payload_too_large');
      const other = await hg.post('/hooks/homeassistant', { friendly_name: big, state: 'on' });
      assert.equal(other.status, 413, 'the allowance is for the gmail path only');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('transforms and token-authenticated mappings', () => {
    it('a transform that filters events: null → 204, else the action', async () => {
      const resolved = await hg.post('/hooks/alerts', {
        status: 'resolved',
        alerts: [{ labels: { alertname: 'DiskFull' } }],
      });
      assert.equal(resolved.status, 204);
      assert.equal(resolved.text, '');
      const firing = await hg.post('/hooks/alerts', {
        status: 'firing',
        alerts: [{ labels: { alertname: 'DiskFull' } }, { labels: { alertname: 'HighLoad' } }],
      });
      assert.equal(firing.status, 200, firing.text);
      const run = await withStore((s) => s.getRun(String(firing.body?.runId)));
      assert.equal(run?.message, 'Firing: DiskFull, HighLoad');
      assert.equal(run?.name, 'Alerts');
    });

    it('a throwing transform is 500 mapping_failed; the log has the reason, not the payload', async () => {
      const r = await hg.post('/hooks/broken', { secretValue: 'p4yl0ad-s3cr3t' });
      assert.equal(r.status, 500);
      assert.equal(r.body?.code, 'mapping_failed');
      assert.equal(r.body?.error, 'hook mapping failed: transform threw');
      const line = await hg.waitForLog((l) => l.msg === 'hook mapping failed: transform threw');
      assert.equal(line.mappingId, 'broken');
      assert.ok(!hg.lines.some((l) => l.includes('"secretValue"')));
    });

    it('Home Assistant → wake', async () => {
      const r = await hg.post('/hooks/homeassistant', {
        entity_id: 'binary_sensor.front_door',
        friendly_name: 'Front door',
        state: 'open',
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body?.mode, 'now');
      assert.ok((await pendingTexts()).includes('Home Assistant: Front door is open'));
    });

    it('token paths still need the token; unknown paths are 401 without it and 404 with it', async () => {
      assert.equal((await send('/hooks/homeassistant', '{"state":"x"}')).status, 401);
      assert.equal((await send('/hooks/nothing-here', '{}')).status, 401);
      assert.equal((await hg.post('/hooks/nothing-here', {})).status, 404);
    });

    it('policy errors come out as 400 with the same codes as direct requests', async () => {
      const cases: Array<[Record<string, unknown>, string, RegExp]> = [
        [{ msg: 'm', key: 'agent:main:main' }, 'session_key_not_allowed', /must start with one of: hook:/],
        [{ msg: 'm', key: 'hook:ok', channel: 'telegram' }, 'invalid_channel', /not configured/],
        [{ msg: 'm', key: 'hook:ok', model: 'nope/x' }, 'model_not_allowed', /nope/],
        [{ msg: ' ', key: 'hook:ok' }, 'invalid_payload', /^hook mapping requires message$/],
      ];
      for (const [body, code, message] of cases) {
        const r = await hg.post('/hooks/keyed', body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.equal(r.body?.code, code);
        assert.match(String(r.body?.error), message);
      }
      const ok = await hg.post('/hooks/keyed', { msg: 'fine', key: 'hook:keyed:1' });
      assert.equal(ok.status, 200, ok.text);
      const run = await withStore((s) => s.getRun(String(ok.body?.runId)));
      assert.equal(run?.sessionKey, 'hook:keyed:1');
      assert.equal(run?.channel, 'last', 'a channel template that renders blank leaves the default');
    });
  });
});
