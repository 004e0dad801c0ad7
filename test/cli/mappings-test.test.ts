/**
 * `hookgate mappings test NAME --data …` renders what a request would become — through the
 * service's own routes (templates, transforms, presets, signatures, policy) — and queues nothing. Real binary.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { runCli } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

describe('cli: mappings test', () => {
  let dir: string;
  const cli = (...args: string[]) =>
    runCli(['mappings', 'test', ...args, '--config', join(dir, 'hookgate.json5')], {
      cwd: dir,
      env: { GH_SECRET: 'gh-secret-for-tests' },
    });

  before(() => {
    dir = tempDir('hookgate-mappings-test-');
    mkdirSync(join(dir, 'hooks/transforms'), { recursive: true });
    writeFileSync(
      join(dir, 'hooks/transforms/alert.mjs'),
      'export default ({ payload }) => payload.status === "resolved" ? null : { message: `ALERT ${payload.name}`, name: "Alertmanager" };\n',
    );
    writeFileSync(
      join(dir, 'hookgate.json5'),
      JSON.stringify({
        storage: { path: './data/hookgate.db' },
        hooks: {
          enabled: true,
          token: TOKEN,
          presets: ['gmail', { use: 'stripe', secret: 'whsec_stripe_for_tests' }],
          mappings: [
            {
              id: 'gh-pr',
              match: { path: 'github', headers: { 'x-github-event': 'pull_request' } },
              name: 'GitHub',
              messageTemplate: 'PR #{{pull_request.number}} {{action}}: {{pull_request.title}}',
              signature: { scheme: 'github', secret: '${GH_SECRET}' },
            },
            { id: 'door', match: { path: 'door' }, action: 'wake', textTemplate: 'door {{state}}' },
            {
              id: 'slash',
              match: { path: 'slack-slash' },
              name: 'Slack',
              messageTemplate: '{{user_name}} asked {{command}} for {{text}}',
              signature: { scheme: 'slack', secret: 'slack-signing-secret-for-tests' },
            },
            { id: 'alerts', match: { path: 'alerts' }, transform: { module: 'alert.mjs' } },
            { id: 'strict', match: { path: 'strict' }, messageTemplate: 'x', model: '{{model}}' },
          ],
        },
        channels: { default: { channel: 'log' } },
      }),
    );
  });

  it('renders a signed GitHub mapping (signed here with its own secret): the agent run it would queue', async () => {
    const r = await cli(
      'github',
      '--data',
      '{"action":"opened","pull_request":{"number":7,"title":"Fix login"}}',
      '-H',
      'x-github-event:pull_request',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^mapping gh-pr \(signed here as github with its secret\) → 1 action$/m);
    assert.match(r.stdout, /message: PR #7 opened: Fix login$/m);
    assert.match(r.stdout, /^nothing was queued$/m);
    assert.ok(
      !r.stdout.includes('gh-secret-for-tests') && !r.stderr.includes('gh-secret-for-tests'),
      'the secret is never printed',
    );
    assert.equal(existsSync(join(dir, 'data')), false, 'no store was created or written');
  });

  it('--form: a Slack slash command (a form body, signed here) renders; fields as name=value pairs or an encoded file', async () => {
    const pairs = await cli(
      'slack-slash',
      '--form',
      'user_name=Steve',
      '--form',
      'command=/weather',
      '--form',
      'text=94070 & rain?',
    );
    assert.equal(pairs.code, 0, pairs.stderr);
    assert.match(pairs.stdout, /^mapping slash \(signed here as slack with its secret\) → 1 action$/m);
    assert.match(pairs.stdout, /message: Steve asked \/weather for 94070 & rain\?$/m);
    writeFileSync(join(dir, 'slash.form'), 'user_name=Ada&command=%2Fweather&text=10115\n');
    const file = await cli('slack-slash', '--form', '@slash.form');
    assert.equal(file.code, 0, file.stderr);
    assert.match(file.stdout, /message: Ada asked \/weather for 10115$/m);
    const typed = await cli(
      'slack-slash',
      '--data',
      'user_name=Bo&command=%2Fw&text=1',
      '--content-type',
      'application/x-www-form-urlencoded',
    );
    assert.equal(typed.code, 0, typed.stderr);
    assert.match(typed.stdout, /message: Bo asked \/w for 1$/m);
  });

  it('--form: refused where the service reads JSON, with --data, or without name=value; a form without --form is JSON', async () => {
    const tokenPath = await cli('door', '--form', 'state=open');
    assert.equal(tokenPath.code, 1);
    assert.match(
      tokenPath.stderr,
      /the service would answer 400 invalid_json: a form body is read only on a path whose mappings verify a signature/,
    );
    const both = await cli('door', '--form', 'state=open', '--data', '{}');
    assert.match(both.stderr, /give --data or --form, not both/);
    const bare = await cli('slack-slash', '--form', 'novalue');
    assert.match(bare.stderr, /--form "novalue": expected name=value or @FILE/);
    const none = await cli('door');
    assert.equal(none.code, 1);
    assert.match(none.stderr, /give the body: --data JSON/);
    const asJson = await cli('slack-slash', '--data', 'user_name=Steve&text=94070');
    assert.match(asJson.stderr, /--data is not valid JSON/);
  });

  it("renders a sender preset (signed here with the entry's secret): its wording and session key", async () => {
    const body = {
      id: 'evt_1',
      type: 'invoice.paid',
      data: {
        object: {
          number: 'A-7',
          amount_paid: 900,
          currency: 'eur',
          customer: 'cus_9',
          customer_email: 'ada@example.com',
        },
      },
    };
    const r = await cli('stripe', '--data', JSON.stringify(body));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^mapping stripe \(signed here as stripe with its secret\) → 1 action$/m);
    assert.match(r.stdout, /in session hook:stripe:cus_9 \(persistent\)/);
    assert.match(r.stdout, /message: Stripe invoice A-7 paid: 900 eur by ada@example\.com \(customer cus_9\)/);
    const other = await cli('stripe', '--data', JSON.stringify({ ...body, type: 'charge.captured' }));
    assert.equal(other.code, 0, other.stderr);
    assert.match(
      other.stdout,
      /ignored: the service would answer 200 \{"ok":true,"ignored":true\}/,
      'an event type the preset does not take: signed, so ignored',
    );
  });

  it('a wake mapping, a transform (also its null → skip), and the gmail preset', async () => {
    const wake = await cli('door', '--data', '{"state":"open"}', '--json');
    assert.equal(wake.code, 0, wake.stderr);
    assert.deepEqual((JSON.parse(wake.stdout) as { actions: unknown[] }).actions, [
      { kind: 'wake', text: 'door open', mode: 'now', sessionKey: 'main', untrusted: true, source: 'door' },
    ]);

    const alert = await cli('alerts', '--data', '{"name":"DiskFull","status":"firing"}');
    assert.equal(alert.code, 0, alert.stderr);
    assert.match(alert.stdout, /agent run "Alertmanager"/);
    assert.match(alert.stdout, /message: ALERT DiskFull/);
    const resolved = await cli('alerts', '--data', '{"name":"DiskFull","status":"resolved"}');
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.match(resolved.stdout, /skipped: the service would answer 204/);

    const mail = await runCli(['mappings', 'test', 'gmail', '--data', '-', '--config', join(dir, 'hookgate.json5')], {
      cwd: dir,
      env: { GH_SECRET: 'x' },
      input: JSON.stringify({
        messages: [{ id: 'm1', from: 'ada@example.com', subject: 'Hi', snippet: 'hello', body: 'hello there' }],
      }),
    });
    assert.equal(mail.code, 0, mail.stderr);
    assert.match(mail.stdout, /session hook:gmail:m1/);
  });

  it('an event type no mapping takes on a signed path: what the service answers its signed sender (200, ignored), exit 0', async () => {
    const r = await cli('github', '--data', '{"action":"opened","issue":{"number":7}}', '-H', 'x-github-event:issues');
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^no mapping or preset matches "github" with this body and these headers \(signed here as github with the secret of mapping gh-pr\)$/m,
    );
    assert.match(
      r.stdout,
      /the service would answer 200 \{"ok":true,"ignored":true\} and record it as unmatched \(with the hook token instead of a signature: 404\)$/m,
    );
    assert.match(r.stdout, /^nothing was queued$/m);
    const json = await cli('github', '--data', '{"action":"opened"}', '-H', 'x-github-event:push', '--json');
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), {
      kind: 'unmatched',
      scheme: 'github',
      event: { header: 'x-github-event', value: 'push' },
      signed: 'github',
    });
    assert.ok(
      !r.stdout.includes('gh-secret-for-tests') && !r.stderr.includes('gh-secret-for-tests'),
      'the secret is never printed',
    );
  });

  it('says what the service would refuse, with its status and code, and exits 1', async () => {
    const none = await cli('nowhere', '--data', '{}');
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no mapping or preset matches "nowhere" \(the service would answer 404\)/);
    const policy = await cli('strict', '--data', '{"model":"nope/none"}');
    assert.equal(policy.code, 1);
    assert.match(policy.stderr, /the service would answer 400 model_not_allowed/);
    const badJson = await cli('door', '--data', '{not json');
    assert.equal(badJson.code, 1);
    assert.match(badJson.stderr, /--data is not valid JSON/);
  });
});
