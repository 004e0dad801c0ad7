/**
 * `hooks.presets`: the built-in `gmail` by name, sender presets as objects (config/schema/hooks.ts
 * `senderPresetSchema`, config/checks/presets.ts): defaults, the secret checked by the sender's scheme, and every
 * problem by key path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SENDER_NAMES, type SenderPresetConfig } from '../../src/config/schema/hooks.js';
import { senderPresets } from '../../src/hooks/mappings/presets/index.js';
import { assertIssue, parse } from './helpers.js';
import { TOKEN } from '../support/token.js';

const hooks = (extra: Record<string, unknown>) => ({ hooks: { enabled: true, token: TOKEN, ...extra } });
const presets = (...list: unknown[]) => hooks({ presets: list });
const GH = { use: 'github', secret: 'gh-secret' };

describe('hooks.presets: sender presets', () => {
  it('one line per sender: the path defaults to the name, the secret becomes the signature of its scheme', () => {
    const c = parse(
      presets('gmail', GH, {
        use: 'stripe',
        path: '/billing/stripe/',
        secrets: ['whsec_a', 'whsec_b'],
        toleranceSeconds: 60,
      }),
    );
    const [gmail, github, stripe] = c.hooks.presets as [string, SenderPresetConfig, SenderPresetConfig];
    assert.equal(gmail, 'gmail');
    assert.equal(github.path, 'github');
    assert.deepEqual(github.signature, { scheme: 'github', secrets: ['gh-secret'], toleranceSeconds: 300 });
    assert.equal(github.action, 'agent');
    assert.equal(github.events, undefined, "the preset's own list applies");
    assert.equal(stripe.path, 'billing/stripe');
    assert.deepEqual(stripe.signature, { scheme: 'stripe', secrets: ['whsec_a', 'whsec_b'], toleranceSeconds: 60 });
  });

  it('the secret may be a reference, resolved like every secret', () => {
    const c = parse(presets({ use: 'github', secret: { env: 'GITHUB_WEBHOOK_SECRET' } }), {
      GITHUB_WEBHOOK_SECRET: 'from-env',
    });
    assert.deepEqual((c.hooks.presets[0] as SenderPresetConfig).signature.secrets, ['from-env']);
    assertIssue(
      presets({ use: 'github', secret: { env: 'GITHUB_WEBHOOK_SECRET' } }),
      'hooks.presets[0].secret',
      'environment variable GITHUB_WEBHOOK_SECRET is not set',
    );
  });

  it('every name of the config has its preset in the catalogue, in the same order', () => {
    assert.deepEqual(
      senderPresets().map((p) => p.name),
      SENDER_NAMES,
    );
  });

  it('an unknown sender or preset name, by key path', () => {
    assertIssue(
      presets('gmail', { use: 'githib', secret: 's' }),
      'hooks.presets[1].use',
      `unknown sender "githib", expected one of ${SENDER_NAMES.join(', ')}`,
    );
    assertIssue(
      presets('github'),
      'hooks.presets[0]',
      /^unknown preset "github": "gmail" is the built-in one; a sender is an object, e\.g\. \{ use: "github"/,
    );
    assertIssue(presets(42), 'hooks.presets[0]', /expected object/);
    assertIssue(presets({ secret: 's' }), 'hooks.presets[0].use');
    assertIssue(presets({ ...GH, messageTemplate: 'x' }), 'hooks.presets[0]', 'unknown key: messageTemplate');
  });

  it('the secret: one of secret or secrets, checked by the scheme (a standard-webhooks whsec_ must be base64)', () => {
    assertIssue(presets({ use: 'github' }), 'hooks.presets[0].secret', 'set secret or secrets');
    assertIssue(
      presets({ use: 'github', secret: 'a', secrets: ['b'] }),
      'hooks.presets[0].secrets',
      'set either secret or secrets, not both',
    );
    assertIssue(
      presets({ use: 'standard-webhooks', secret: 'whsec_not base64!' }),
      'hooks.presets[0].secret',
      'a whsec_ secret must be whsec_ followed by base64',
    );
    assertIssue(presets({ use: 'github', secret: '  ' }), 'hooks.presets[0].secret');
    // Stripe's whsec_ is used as it is (not decoded): any value is a key.
    assert.ok(parse(presets({ use: 'stripe', secret: 'whsec_not base64!' })));
  });

  it('events and templates: event types, families and "*"; a template for an event not taken is an error', () => {
    assert.ok(
      parse(
        presets(
          { ...GH, events: ['pull_request', 'issues'] },
          { use: 'stripe', secret: 'whsec_x', events: ['invoice.*', 'charge.refunded'] },
        ),
      ),
    );
    assertIssue(presets({ ...GH, events: [] }), 'hooks.presets[0].events');
    assertIssue(presets({ ...GH, events: ['pull request'] }), 'hooks.presets[0].events[0]', /must be an event type/);
    assertIssue(presets({ ...GH, events: ['charge*'] }), 'hooks.presets[0].events[0]', /must be an event type/);
    assertIssue(
      presets({ ...GH, events: ['issues'], templates: { pull_request: 'x' } }),
      'hooks.presets[0].templates.pull_request',
      '"pull_request" is not in events, so this template is never used',
    );
    assert.ok(parse(presets({ ...GH, events: ['issues'], templates: { issues: 'x', '*': 'y' } })));
    assert.ok(
      parse(presets({ use: 'stripe', secret: 'whsec_x', events: ['invoice.*'], templates: { 'invoice.paid': 'x' } })),
    );
    assertIssue(
      presets({ ...GH, templates: { 'issues.*': 'x' } }),
      'hooks.presets[0].templates.issues.*',
      /must be an event type/,
    );
  });

  it("a path of its own: not wake or agent, not another preset's, not the gmail preset's", () => {
    assertIssue(
      presets({ ...GH, path: 'wake' }),
      'hooks.presets[0].path',
      'must be a sub-path other than wake and agent',
    );
    assertIssue(
      presets(GH, { use: 'github', path: 'github/', secret: 'other' }),
      'hooks.presets[1].path',
      /^"github" is already the path of hooks\.presets\[0\]/,
    );
    assertIssue(
      presets('gmail', { ...GH, path: 'gmail' }),
      'hooks.presets[1].path',
      /^"gmail" is already the path of the gmail preset/,
    );
    assert.ok(parse(presets(GH, { use: 'github', path: 'github-work', secret: 'other' })));
  });

  it("the preset's id is its path: a custom mapping with that id is an error", () => {
    assertIssue(
      hooks({ mappings: [{ id: 'github', match: { path: 'gh' }, messageTemplate: 'x' }], presets: [GH] }),
      'hooks.presets[0].path',
      /^"github" is the id of hooks\.mappings\[0\] too/,
    );
  });

  it('session keys: the prefixes must admit hook:<path>:; a key of your own follows the mapping rules', () => {
    assertIssue(
      hooks({ defaultSessionKey: 'ops:x', allowedSessionKeyPrefixes: ['ops:'], presets: [GH] }),
      'hooks.presets[0].path',
      /hook:github:…, which hooks\.allowedSessionKeyPrefixes \(ops:\) does not admit/,
    );
    assert.ok(
      parse(
        hooks({
          defaultSessionKey: 'ops:x',
          allowedSessionKeyPrefixes: ['ops:'],
          presets: [{ ...GH, action: 'wake' }],
        }),
      ),
      'a wake goes to the main session',
    );
    assert.ok(
      parse(
        hooks({
          defaultSessionKey: 'hook:main-x',
          allowedSessionKeyPrefixes: ['hook:main', 'hook:github:'],
          presets: [GH],
        }),
      ),
    );
    assertIssue(
      presets({ ...GH, sessionKey: 'hook:gh:{{repository.name}}' }),
      'hooks.presets[0].sessionKey',
      /allowedSessionKeyPrefixes is required/,
    );
  });

  it("the mapping fields are checked as a mapping's: channel, model, agent", () => {
    assertIssue(
      presets({ ...GH, channel: 'telegram' }),
      'hooks.presets[0].channel',
      /channel "telegram" is not configured/,
    );
    assertIssue(presets({ ...GH, model: 'nope/nope' }), 'hooks.presets[0].model');
    assertIssue(
      {
        ...hooks({ allowedAgentIds: ['main'], presets: [{ ...GH, agentId: 'ops' }] }),
        agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
      },
      'hooks.presets[0].agentId',
      'agent "ops" is not allowed by hooks.allowedAgentIds',
    );
    assertIssue(presets({ ...GH, allowFrom: [] }), 'hooks.presets[0].allowFrom');
    assertIssue(presets({ ...GH, action: 'later' }), 'hooks.presets[0].action');
  });

  it('a custom mapping that takes every request on the path is a warning: the preset never runs', () => {
    const c = parse(
      hooks({ mappings: [{ id: 'all', match: { path: 'github' }, messageTemplate: 'x' }], presets: [GH] }),
    );
    assert.ok(
      c.warnings.some(
        (w) =>
          w ===
          'hooks.presets[0] (github on "github") never matches: hooks.mappings[0] takes every request on that path (first match wins)',
      ),
      JSON.stringify(c.warnings),
    );
    const narrowed = parse(
      hooks({
        mappings: [
          {
            id: 'deploys',
            match: { path: 'github', headers: { 'x-github-event': 'deployment' } },
            messageTemplate: 'x',
          },
        ],
        presets: [GH],
      }),
    );
    assert.ok(!narrowed.warnings.some((w) => w.startsWith('hooks.presets[0]')));
  });

  it('twilio needs url, the public URL Twilio signs; no other sender takes one', () => {
    assertIssue(
      presets({ use: 'twilio', secret: 'auth-token' }),
      'hooks.presets[0].url',
      /^required by the twilio preset: the public URL Twilio is configured to call/,
    );
    assertIssue(
      presets({ use: 'twilio', secret: 'auth-token', url: 'https://hooks.example.com/hooks/twilio?x=1' }),
      'hooks.presets[0].url',
      /must not contain a query string/,
    );
    assertIssue(
      presets({ ...GH, url: 'https://hooks.example.com/hooks/github' }),
      'hooks.presets[0].url',
      'only applies to the twilio preset',
    );
    const c = parse(presets({ use: 'twilio', secret: 'auth-token', url: 'https://hooks.example.com/hooks/twilio' }));
    assert.deepEqual((c.hooks.presets[0] as SenderPresetConfig).signature, {
      scheme: 'twilio',
      secrets: ['auth-token'],
      toleranceSeconds: 300,
      url: 'https://hooks.example.com/hooks/twilio',
    });
  });

  it("alertmanager's bearer secret must not be a hook token: it would open every route", () => {
    const message = /^a bearer secret must not be a hook token \(hooks\.token, hooks\.tokens\)/;
    assertIssue(presets({ use: 'alertmanager', secret: TOKEN }), 'hooks.presets[0].secret', message);
    assertIssue(
      hooks({
        tokens: [{ id: 'ci', token: 'ci-token-0123456789abcdef0123' }],
        presets: [{ use: 'alertmanager', secrets: ['own-secret', 'ci-token-0123456789abcdef0123'] }],
      }),
      'hooks.presets[0].secrets',
      message,
    );
    assert.ok(parse(presets({ use: 'alertmanager', secret: 'alertmanager-own-secret' })));
  });

  it("event types with a slash (Shopify's orders/create) and their families (orders/*)", () => {
    assert.ok(
      parse(
        presets({
          use: 'shopify',
          secret: 's',
          events: ['orders/*', 'refunds/create'],
          templates: { 'orders/paid': 'x' },
        }),
      ),
    );
    assertIssue(
      presets({ use: 'shopify', secret: 's', events: ['orders/create'], templates: { 'refunds/create': 'x' } }),
      'hooks.presets[0].templates.refunds/create',
      /is not in events/,
    );
  });
});
