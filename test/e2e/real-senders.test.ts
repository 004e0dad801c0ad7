/**
 * Real senders against the real server process: Slack's Request URL handshake, slash commands and
 * Interactivity (form bodies) and Events API retries, signed exactly the way Slack signs them; GitHub's ping and
 * `match.headers`; id-less Gmail messages; and a 409 idempotency conflict recorded once in the received log.
 * (`npm run build` first: the server runs from dist.)
 */
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { type Hookgate, request, runCli, startHookgate, TOKEN } from '../support/server.js';
import { withStoreAt } from '../support/store-at.js';

const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const GITHUB_SECRET = "It's a Secret to Everybody";

/** Slack: `X-Slack-Signature: v0=` + hex HMAC-SHA256(signing secret, `v0:{ts}:{raw body}`). */
function slackHeaders(body: string, contentType: string, ts = Math.floor(Date.now() / 1000)): Record<string, string> {
  return {
    'content-type': contentType,
    'x-slack-request-timestamp': String(ts),
    'x-slack-signature': `v0=${createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
  };
}
const FORM = 'application/x-www-form-urlencoded';

/** One Slack-signed mapping per Request URL (slash command, Event Subscriptions, Interactivity), as the docs set them up. */
const slackMapping = (id: string, path: string, messageTemplate: string) => ({
  id,
  match: { path },
  name: 'Slack',
  messageTemplate,
  signature: { scheme: 'slack', secret: { env: 'SLACK_SIGNING_SECRET' } },
});

const githubHeaders = (body: string, event: string) => ({
  'content-type': 'application/json',
  'x-github-event': event,
  'x-github-delivery': randomUUID(),
  'x-hub-signature-256': `sha256=${createHmac('sha256', GITHUB_SECRET).update(body).digest('hex')}`,
});

describe('real senders (real process)', () => {
  let dir: string;
  let hg: Hookgate;
  let clientSeq = 0;
  const send = (path: string, body: string, headers: Record<string, string>) =>
    request(`${hg.url}${path}`, {
      method: 'POST',
      body,
      headers: { 'x-forwarded-for': `10.9.0.${++clientSeq}`, ...headers },
    });

  const withStore = <T>(fn: (s: SqliteStore) => Promise<T>): Promise<T> => withStoreAt(dir, fn);
  const runsOf = (mappingId: string) =>
    withStore(async (s) => (await s.listRuns({ limit: 500 })).filter((r) => r.mappingId === mappingId));

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'hookgate-e2e-senders-')));
    hg = await startHookgate({
      dir,
      env: { SLACK_SIGNING_SECRET: SLACK_SECRET },
      config: {
        gateway: { trustedProxies: ['127.0.0.1', '::1'] },
        hooks: {
          presets: ['gmail'],
          allowedSessionKeyPrefixes: ['hook:'],
          mappings: [
            slackMapping('slack-command', 'slack', '{{user_name}} ran {{command}} {{text}} in #{{channel_name}}'),
            slackMapping('slack-events', 'slack-events', 'Slack {{event.type}} from {{event.user}}: {{event.text}}'),
            slackMapping(
              'slack-actions',
              'slack-actions',
              '{{payload.payload.user.name}} clicked {{payload.payload.actions[0].action_id}}',
            ),
            {
              id: 'github-prs',
              match: { path: 'github', headers: { 'X-GitHub-Event': 'pull_request' } },
              name: 'GitHub',
              messageTemplate: 'PR #{{pull_request.number}} {{action}}: {{pull_request.title}}',
              signature: { scheme: 'github', secret: GITHUB_SECRET },
            },
            {
              id: 'github-issues',
              match: { path: 'github', headers: { 'x-github-event': 'issues' } },
              name: 'GitHub',
              messageTemplate: 'Issue #{{issue.number}} {{action}}',
              signature: { scheme: 'github', secret: GITHUB_SECRET },
            },
            { id: 'plain', match: { path: 'plain' }, messageTemplate: '{{text}}' },
          ],
        },
      },
    });
  });
  after(async () => {
    await hg?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('Slack', () => {
    it("Event Subscriptions' url_verification: the challenge is echoed, nothing is queued, one accepted record", async () => {
      const body = JSON.stringify({
        token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl',
        challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
        type: 'url_verification',
      });
      const r = await send('/hooks/slack-events', body, slackHeaders(body, 'application/json'));
      assert.equal(r.status, 200, r.text);
      assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(r.body, { challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
      assert.equal((await runsOf('slack-events')).length, 0);
      const rec = await withStore(async (s) => (await s.listReceived(50)).filter((x) => x.path === 'slack-events'));
      assert.equal(rec.length, 1);
      assert.equal(rec[0]!.status, 200);
      assert.equal(rec[0]!.mappingId, 'slack-events');
      assert.deepEqual([rec[0]!.runIds, rec[0]!.eventIds], [[], []]);
    });

    it('an unsigned or forged url_verification is 401 (no challenge for strangers)', async () => {
      const body = JSON.stringify({ token: 't', challenge: 'forged-challenge', type: 'url_verification' });
      const unsigned = await send('/hooks/slack-events', body, { 'content-type': 'application/json' });
      assert.equal(unsigned.status, 401);
      const forged = await send('/hooks/slack-events', body, {
        ...slackHeaders(body, 'application/json'),
        'x-slack-signature': `v0=${'0'.repeat(64)}`,
      });
      assert.equal(forged.status, 401);
      assert.ok(!forged.text.includes('forged-challenge'));
    });

    it('a signed slash command (form body) becomes an agent run and gets an empty 200', async () => {
      const body =
        'token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&team_domain=example&enterprise_id=E0001&enterprise_name=Globular%20Construct%20Inc' +
        '&channel_id=C2147483705&channel_name=test&user_id=U2147483697&user_name=Steve&command=%2Fweather&text=94070' +
        '&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1234%2F5678&trigger_id=13345224609.738474920.8088930838d88f008e0' +
        '&api_app_id=A123456';
      const r = await send('/hooks/slack', body, slackHeaders(body, FORM));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.text, '', 'Slack shows any body to the user: the answer is empty');
      const runs = await runsOf('slack-command');
      assert.equal(runs.length, 1);
      assert.equal(runs[0]!.message, 'Steve ran /weather 94070 in #test');
      // The same form with a bad signature is 401, and a form on an unsigned mapping is refused (JSON only there).
      const forged = await send('/hooks/slack', body, {
        ...slackHeaders(body, FORM),
        'x-slack-signature': `v0=${'1'.repeat(64)}`,
      });
      assert.equal(forged.status, 401);
      const tokenForm = await send('/hooks/plain', 'text=hi', {
        'content-type': FORM,
        authorization: `Bearer ${TOKEN}`,
      });
      assert.equal(tokenForm.status, 400);
      assert.equal(tokenForm.body?.code, 'invalid_json');
    });

    it("Interactivity: the form's payload field is decoded as JSON", async () => {
      const payload = {
        type: 'block_actions',
        user: { id: 'U2147483697', username: 'steve', name: 'steve' },
        api_app_id: 'A123456',
        token: 'gIkuvaNzQIHg97ATvDxqgjtO',
        trigger_id: '13345224609.738474920.8088930838d88f008e0',
        team: { id: 'T0001', domain: 'example' },
        channel: { id: 'C2147483705', name: 'test' },
        response_url: 'https://hooks.slack.com/actions/T0001/1234/5678',
        actions: [
          { action_id: 'approve_deploy', block_id: 'b1', type: 'button', value: 'v1', action_ts: '1700000000.000100' },
        ],
      };
      const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
      const r = await send('/hooks/slack-actions', body, slackHeaders(body, `${FORM}; charset=utf-8`));
      assert.equal(r.status, 200, r.text);
      assert.equal(r.text, '');
      const runs = await runsOf('slack-actions');
      assert.equal(runs.length, 1);
      assert.equal(runs[0]!.message, 'steve clicked approve_deploy');
    });

    it('an Events API retry (X-Slack-Retry-Num) with the same event_id makes no second run', async () => {
      const body = JSON.stringify({
        token: 'XXYYZZ',
        team_id: 'T0001',
        api_app_id: 'A123456',
        event: {
          type: 'app_mention',
          user: 'U2147483697',
          text: '<@U0LAN0Z89> deploy status?',
          ts: '1515449522.000016',
          channel: 'C2147483705',
        },
        type: 'event_callback',
        event_id: 'Ev0PV52K25',
        event_time: 1515449522,
      });
      const first = await send('/hooks/slack-events', body, slackHeaders(body, 'application/json'));
      assert.equal(first.status, 200, first.text);
      assert.match(String(first.body?.runId), /^[0-9a-f-]{36}$/);
      // Slack signs each retry afresh (a later timestamp); the body, and so the event_id, is the same.
      const retry = await send('/hooks/slack-events', body, {
        ...slackHeaders(body, 'application/json', Math.floor(Date.now() / 1000) + 1),
        'x-slack-retry-num': '1',
        'x-slack-retry-reason': 'http_timeout',
      });
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.body?.runId, first.body?.runId);
      assert.equal(retry.body?.duplicate, true);
      const runs = await runsOf('slack-events');
      assert.equal(runs.length, 1);
      assert.equal(runs[0]!.message, 'Slack app_mention from U2147483697: <@U0LAN0Z89> deploy status?');
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('GitHub', () => {
    it('ping (sent when the webhook is created) is answered without queueing, though no mapping matches "ping"', async () => {
      const body = JSON.stringify({
        zen: 'Design for failure.',
        hook_id: 1,
        hook: {
          type: 'Repository',
          id: 1,
          name: 'web',
          active: true,
          events: ['pull_request'],
          config: { content_type: 'json', url: 'https://example.com/hooks/github', insecure_ssl: '0' },
        },
        repository: { full_name: 'acme/app' },
        sender: { login: 'octocat' },
      });
      const r = await send('/hooks/github', body, githubHeaders(body, 'ping'));
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { ok: true, ping: true });
      assert.equal((await runsOf('github-prs')).length + (await runsOf('github-issues')).length, 0);
      const forged = await send('/hooks/github', body, {
        ...githubHeaders(body, 'ping'),
        'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
      });
      assert.equal(forged.status, 401);
    });

    it('match.headers routes by X-GitHub-Event; an event no mapping names is 404', async () => {
      const pr = JSON.stringify({
        action: 'opened',
        number: 7,
        pull_request: { number: 7, title: 'Retry with backoff' },
      });
      const a = await send('/hooks/github', pr, githubHeaders(pr, 'pull_request'));
      assert.equal(a.status, 200, a.text);
      const issue = JSON.stringify({ action: 'opened', issue: { number: 8 } });
      const b = await send('/hooks/github', issue, githubHeaders(issue, 'issues'));
      assert.equal(b.status, 200, b.text);
      const push = JSON.stringify({ ref: 'refs/heads/main' });
      const c = await send('/hooks/github', push, { ...githubHeaders(push, 'push'), authorization: `Bearer ${TOKEN}` });
      assert.equal(c.status, 404, c.text);
      const [prRuns, issueRuns] = [await runsOf('github-prs'), await runsOf('github-issues')];
      assert.deepEqual(
        prRuns.map((r) => r.message),
        ['PR #7 opened: Retry with backoff'],
      );
      assert.deepEqual(
        issueRuns.map((r) => r.message),
        ['Issue #8 opened'],
      );
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  it('gmail: two messages without an id get two different session keys (and both run)', async () => {
    const r = await hg.post('/hooks/gmail', {
      source: 'gmail',
      messages: [
        { from: 'a@example.com', subject: 'one' },
        { from: 'b@example.com', subject: 'two' },
      ],
    });
    assert.equal(r.status, 200, r.text);
    const ids = r.body?.runIds as string[];
    assert.equal(ids.length, 2);
    const keys = await withStore(async (s) => Promise.all(ids.map(async (id) => (await s.getRun(id))!.sessionKey)));
    for (const k of keys) assert.match(k, /^hook:gmail:[0-9a-f-]{36}$/);
    assert.notEqual(keys[0], keys[1]);
  });

  it('a 409 idempotency_conflict is written once to the received log', async () => {
    const key = `conflict-${randomUUID()}`;
    const a = await hg.post('/hooks/agent', { message: 'first' }, { 'idempotency-key': key });
    assert.equal(a.status, 200, a.text);
    const b = await hg.post('/hooks/agent', { message: 'different body' }, { 'idempotency-key': key });
    assert.equal(b.status, 409, b.text);
    assert.equal(b.body?.code, 'idempotency_conflict');
    // The handler records in the background: give a second record time to land before counting.
    await new Promise((r) => setTimeout(r, 300));
    const out = await runCli(['received', '--json', '--limit', '500', '--config', hg.configFile], {
      env: { SLACK_SIGNING_SECRET: SLACK_SECRET },
    });
    assert.equal(out.code, 0, out.stderr);
    const conflicts = (JSON.parse(out.stdout) as Array<{ code: string | null; status: number }>).filter(
      (x) => x.code === 'idempotency_conflict',
    );
    assert.deepEqual(
      conflicts.map((x) => x.status),
      [409],
      out.stdout,
    );
  });
});
