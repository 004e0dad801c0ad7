/**
 * A signed request that no mapping of its path takes, through the path's own verifier and then the routes, as the
 * ingress runs them: each signature scheme signed the way its sender signs (the senders' libraries where there is
 * one). A verified signature with no match is `unmatched` (answered 200, ignored; not an auth failure); a wrong
 * signature is refused by the verifier, and unauthorized at the routes; the token with no match stays `none` (404).
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import { sign as githubSign } from '@octokit/webhooks-methods';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { Stripe } from '../../support/sender-sdks.js';
import { validateConfig } from '../../../src/config/load.js';
import { buildHooksContext } from '../../../src/hooks/context.js';
import { createHookRoutes, type RouteResult } from '../../../src/hooks/routes.js';
import type { Verdict } from '../../../src/hooks/verifier.js';
import { withoutCredentials } from '../../../src/ingress/auth.js';
import { LazyPayload } from '../../../src/ingress/body.js';
import { TOKEN } from '../../support/token.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const NOW_S = Math.floor(NOW / 1000);
const SECRETS = {
  github: "It's a Secret to Everybody",
  stripe: 'whsec_test_secret_for_unmatched_events',
  slack: '8f742231b10e8888abcd99yyyzzz85a5',
  svix: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  hmac: 'ci-secret-for-tests',
};

/** One signed mapping per scheme, each narrowed (by header or `source`) so that some of its sender's events match none. */
const MAPPINGS = [
  {
    id: 'github-prs',
    match: { path: 'github', headers: { 'x-github-event': 'pull_request' } },
    messageTemplate: 'PR {{action}}',
    signature: { scheme: 'github', secret: SECRETS.github },
  },
  {
    id: 'stripe-billing',
    match: { path: 'stripe', source: 'billing' },
    messageTemplate: '{{type}}',
    signature: { scheme: 'stripe', secret: SECRETS.stripe },
  },
  {
    id: 'slack-ops',
    match: { path: 'slack', source: 'ops' },
    messageTemplate: '{{text}}',
    signature: { scheme: 'slack', secret: SECRETS.slack },
  },
  {
    id: 'svix-orders',
    match: { path: 'svix', source: 'orders' },
    messageTemplate: '{{type}}',
    signature: { scheme: 'standard-webhooks', secret: SECRETS.svix },
  },
  {
    id: 'ci-builds',
    match: { path: 'ci', headers: { 'x-ci-event': 'build' } },
    messageTemplate: 'build {{status}}',
    signature: { scheme: 'hmac-sha256', secret: SECRETS.hmac, header: 'x-signature', prefix: 'sha256=' },
  },
  { id: 'plain', match: { path: 'plain' }, messageTemplate: '{{text}}' },
];

function setup() {
  const config = validateConfig(
    { hooks: { enabled: true, token: TOKEN, mappings: MAPPINGS } },
    undefined,
    process.cwd(),
    { env: {} },
  );
  return { ctx: buildHooksContext(config, 1), routes: createHookRoutes({ logger: pino({ level: 'silent' }) }) };
}

interface Sent {
  verdict: Verdict;
  /** What the routes answer once the verdict is handed on (the ingress stops at a refused verdict; a caller may not). */
  result: RouteResult;
}

/** The ingress's order: the path's verifier over the raw bytes, then the parse (JSON or a form), then `resolve`. */
async function send(
  subPath: string,
  body: string,
  headers: IncomingHttpHeaders,
  opts: { form?: boolean; token?: boolean } = {},
): Promise<Sent> {
  const s = setup();
  const rawBody = Buffer.from(body);
  const parsed = new LazyPayload(rawBody, opts.form === true);
  const hookToken = opts.token ? { id: 'default', notAfter: undefined } : undefined;
  const verdict = await s.routes
    .plan(s.ctx, subPath)
    .verifier.verify({ rawHeaders: headers, now: NOW, hookToken, rawBody, peek: () => parsed.peek() });
  const result = await s.routes.resolve({
    ctx: s.ctx,
    subPath,
    payload: parsed.get(),
    rawBody,
    headers: withoutCredentials(headers),
    rawHeaders: headers,
    query: new URLSearchParams(),
    now: NOW,
    tokenVerified: verdict.ok && verdict.tokenId !== null,
    ...(verdict.signatures ? { signatures: verdict.signatures } : {}),
    ...(opts.form ? { form: true } : {}),
  });
  return { verdict, result };
}

const hmacHex = (key: string, data: string) => createHmac('sha256', key).update(data).digest('hex');

/** Each scheme's sender: its headers for a body, and a tampered copy of them (the body changed after signing). */
const SENDERS = {
  github: async (body: string, event: string) => ({
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': 'd-1',
    'x-hub-signature-256': await githubSign(SECRETS.github, body),
  }),
  stripe: (body: string) => ({
    'content-type': 'application/json',
    'stripe-signature': Stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret: SECRETS.stripe,
      timestamp: NOW_S,
    }),
  }),
  slack: (body: string, contentType: string) => ({
    'content-type': contentType,
    'x-slack-request-timestamp': String(NOW_S),
    'x-slack-signature': `v0=${hmacHex(SECRETS.slack, `v0:${NOW_S}:${body}`)}`,
  }),
  svix: (body: string) => ({
    'content-type': 'application/json',
    'webhook-id': 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
    'webhook-timestamp': String(NOW_S),
    'webhook-signature': new Webhook(SECRETS.svix).sign('msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', new Date(NOW), body),
  }),
  hmac: (body: string, event: string) => ({
    'content-type': 'application/json',
    'x-ci-event': event,
    'x-signature': `sha256=${hmacHex(SECRETS.hmac, body)}`,
  }),
};

/** A verified request that matches nothing: `unmatched`, with what the log line names; a tampered one: refused, then unauthorized. */
async function unmatchedAndTampered(
  subPath: string,
  body: string,
  headers: IncomingHttpHeaders,
  expected: Extract<RouteResult, { kind: 'unmatched' }>,
  opts: { form?: boolean } = {},
): Promise<void> {
  const ok = await send(subPath, body, headers, opts);
  assert.equal(
    ok.verdict.ok && !ok.verdict.settled && ok.verdict.signatures?.any,
    true,
    `${subPath}: the sender's own signature verifies`,
  );
  assert.deepEqual(ok.result, expected);

  const tampered = await send(subPath, body.replace(/.$/, ' $&'), headers, opts);
  assert.equal(tampered.verdict.ok, false, `${subPath}: a body changed after signing is refused before the parse`);
  assert.equal(!tampered.verdict.ok && tampered.verdict.scheme, 'signature');
  assert.equal(tampered.result.kind, 'unauthorized');
  assert.equal(
    tampered.result.kind === 'unauthorized' && tampered.result.signature,
    true,
    'the 401 names the signature',
  );
  assert.match(
    tampered.result.kind === 'unauthorized' ? tampered.result.reason : '',
    new RegExp(`^${expected.scheme} signature `),
  );
}

describe('mapped routes: a verified signature that no mapping takes', () => {
  it('github: an unmapped event type is unmatched (its X-GitHub-Event named); the mapped one is still an action', async () => {
    const issue = JSON.stringify({ action: 'opened', issue: { number: 7 } });
    await unmatchedAndTampered('github', issue, await SENDERS.github(issue, 'issues'), {
      kind: 'unmatched',
      scheme: 'github',
      event: { header: 'x-github-event', value: 'issues' },
    });
    const pr = JSON.stringify({ action: 'opened', number: 42 });
    const mapped = await send('github', pr, await SENDERS.github(pr, 'pull_request'));
    assert.equal(mapped.result.kind, 'actions');
    assert.equal(mapped.result.kind === 'actions' && mapped.result.mappingId, 'github-prs');
  });

  it('stripe: an event the mapping does not match is unmatched', async () => {
    const event = JSON.stringify({
      id: 'evt_1',
      object: 'event',
      type: 'customer.created',
      data: { object: { id: 'cus_1' } },
    });
    await unmatchedAndTampered('stripe', event, SENDERS.stripe(event), { kind: 'unmatched', scheme: 'stripe' });
  });

  it('slack: a form post (slash command) is unmatched with the empty answer Slack expects; a JSON event keeps the JSON answer', async () => {
    const form = 'team_id=T0001&channel_name=test&user_name=Steve&command=%2Fweather&text=94070';
    await unmatchedAndTampered(
      'slack',
      form,
      SENDERS.slack(form, 'application/x-www-form-urlencoded'),
      { kind: 'unmatched', scheme: 'slack', senderAnswer: 'empty' },
      { form: true },
    );
    const event = JSON.stringify({
      type: 'event_callback',
      event_id: 'Ev0PV52K25',
      event: { type: 'app_mention', text: 'hi' },
    });
    await unmatchedAndTampered('slack', event, SENDERS.slack(event, 'application/json'), {
      kind: 'unmatched',
      scheme: 'slack',
    });
  });

  it('standard-webhooks: an event the mapping does not match is unmatched', async () => {
    const event = JSON.stringify({ type: 'invoice.paid', data: { id: 'inv_1' } });
    await unmatchedAndTampered('svix', event, SENDERS.svix(event), { kind: 'unmatched', scheme: 'standard-webhooks' });
  });

  it('hmac-sha256: an event the mapping does not match is unmatched (the header the mapping matches on named)', async () => {
    const event = JSON.stringify({ status: 'deployed' });
    await unmatchedAndTampered('ci', event, SENDERS.hmac(event, 'deploy'), {
      kind: 'unmatched',
      scheme: 'hmac-sha256',
      event: { header: 'x-ci-event', value: 'deploy' },
    });
  });

  it('the hook token with no match stays none (404); neither a token nor a signature stays unauthorized (401)', async () => {
    const body = JSON.stringify({ action: 'opened' });
    const token = await send(
      'github',
      body,
      { 'content-type': 'application/json', 'x-github-event': 'issues' },
      { token: true },
    );
    assert.deepEqual(token.result, { kind: 'none' });
    const neither = await send('github', body, { 'content-type': 'application/json', 'x-github-event': 'issues' });
    assert.equal(neither.verdict.ok, false);
    assert.deepEqual(neither.result, {
      kind: 'unauthorized',
      reason: 'github signature missing header x-hub-signature-256',
      signature: true,
    });
    // A path without a signed mapping: the token decides before the body, as before.
    const plain = await send('plain', JSON.stringify({ text: 'x', source: 'nothing' }), {}, { token: true });
    assert.equal(plain.result.kind, 'actions');
  });

  it('an event header value is cut and made printable for the log line', async () => {
    const body = JSON.stringify({ action: 'x' });
    const headers = await SENDERS.github(body, `weird\u001b[31m${'e'.repeat(300)}`);
    const r = await send('github', body, headers);
    assert.equal(r.result.kind, 'unmatched');
    const value = r.result.kind === 'unmatched' ? (r.result.event?.value ?? '') : '';
    assert.ok(value.length <= 101, `cut: ${value.length}`);
    assert.ok(!value.includes('\u001b'), 'no control character reaches the log');
  });
});
