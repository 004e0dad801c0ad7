/**
 * The sender preset framework (src/hooks/mappings/presets/sender.ts and its compile): an entry becomes one signed
 * mapping on its path, with its event filter, per-event wording, session keys per thing, and the mapping fields the
 * entry sets. The presets' own wording is tested in their files beside this one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HookAction } from '../../../../src/hooks/dispatch.js';
import { senderPresets } from '../../../../src/hooks/mappings/presets/index.js';
import { signedQuery, signRequest } from '../../../../src/hooks/mappings/signatures.js';
import { actionOf, deliver, FRESH_KEY, kit, runOf } from './kit.js';

const GH = { use: 'github', secret: 'gh-secret' };
const issue = {
  action: 'opened',
  issue: { number: 7, title: 'Crash on start' },
  repository: { full_name: 'acme/app' },
  sender: { login: 'ada' },
};
const ev = (event: string) => ({ headers: { 'x-github-event': event } });

describe('sender presets: one entry, one mapping', () => {
  it('the path defaults to the sender name; the id is the path; the plan verifies the signature', async () => {
    const k = kit({ presets: [GH, { use: 'github', path: '/gh/work/', secret: 'other' }] });
    const ids = k.ctx.routes.mapped.mappings.map((m) => [m.id, m.path, m.preset, m.signature?.scheme]);
    assert.deepEqual(ids, [
      ['github', 'github', 'github', 'github'],
      ['gh/work', 'gh/work', 'github', 'github'],
    ]);
    assert.equal(k.routes.plan(k.ctx, 'github').verifier.scheme, 'signature');
    const { result } = await actionOf(k, 'gh/work', issue, ev('issues'));
    assert.equal(result.mappingId, 'gh/work');
  });

  it('defaults: an agent run named after the sender, persistent, in the session of the thing; the delivery id is the idempotency key', async () => {
    const k = kit({ presets: [GH] });
    const { result, action } = await actionOf(k, 'github', issue, {
      headers: { 'x-github-event': 'issues', 'x-github-delivery': 'd-42' },
    });
    assert.equal(result.deliveryId, 'd-42');
    assert.equal(action.kind, 'agent');
    const run = (action as Extract<HookAction, { kind: 'agent' }>).run;
    assert.equal(run.name, 'GitHub');
    assert.equal(run.sessionKey, 'hook:github:acme/app#7');
    assert.equal(run.sessionMode, 'persistent');
    assert.equal(run.mappingId, 'github');
    assert.equal(run.hookPath, 'github');
    assert.equal(run.contentSource, 'webhook');
    assert.equal(run.allowUnsafeExternalContent, false);
    assert.equal(run.deliver, true);
    assert.equal(run.channel, 'last');
  });

  it('a wrong secret or no signature is unauthorized; the hook token does not replace the signature', async () => {
    const k = kit({ presets: [GH] });
    assert.deepEqual(await deliver(k, 'github', issue, { ...ev('issues'), secret: 'wrong' }), {
      kind: 'unauthorized',
      reason: 'github signature signature mismatch',
      signature: true,
    });
    const unsigned = await deliver(k, 'github', issue, { ...ev('issues'), unsigned: true });
    assert.equal(unsigned.kind, 'unauthorized');
  });

  it('events: the worded ones by default; another event type does not match (no run)', async () => {
    const k = kit({ presets: [GH] });
    assert.equal(
      (await runOf(k, 'github', { ...issue, ref: 'refs/heads/main' }, ev('push'))).sessionKey,
      'hook:github:acme/app@refs/heads/main',
    );
    // Not matched: with no mapping taking it, the request needs the hook token (and so is not authorized here).
    assert.equal((await deliver(k, 'github', issue, ev('star'))).kind, 'unauthorized');
    assert.equal((await deliver(k, 'github', issue, {})).kind, 'unauthorized', 'no event header: no event type');
  });

  it('events narrow or widen the list: names, a family ("invoice.*") and "*"; an unworded event gets the default wording', async () => {
    const narrow = kit({ presets: [{ ...GH, events: ['issues'] }] });
    assert.match((await runOf(narrow, 'github', issue, ev('issues'))).message, /^GitHub issue #7 opened/);
    assert.equal((await deliver(narrow, 'github', issue, ev('pull_request'))).kind, 'unauthorized');

    const wide = kit({ presets: [{ ...GH, events: ['issues', 'deployment'] }] });
    const run = await runOf(
      wide,
      'github',
      {
        action: 'created',
        repository: { full_name: 'acme/app', html_url: 'https://github.com/acme/app' },
        sender: { login: 'ada' },
      },
      ev('deployment'),
    );
    assert.equal(run.message, 'GitHub deployment event created in acme/app by ada\nhttps://github.com/acme/app');
    assert.equal(run.sessionKey, 'hook:github:acme/app');

    const stripe = kit({ presets: [{ use: 'stripe', secret: 'whsec_s', events: ['invoice.*'] }] });
    const paid = await runOf(stripe, 'stripe', {
      id: 'evt_1',
      type: 'invoice.paid',
      data: { object: { number: 'A-1', customer: 'cus_1' } },
    });
    assert.match(paid.message, /^Stripe invoice A-1 paid/);
    const finalized = await runOf(stripe, 'stripe', {
      id: 'evt_2',
      type: 'invoice.finalized',
      data: { object: { object: 'invoice', id: 'in_2', customer: 'cus_1' } },
    });
    assert.match(finalized.message, /^Stripe invoice.finalized for invoice in_2 \(customer cus_1\)/);
    assert.equal((await deliver(stripe, 'stripe', { id: 'evt_3', type: 'invoiceX.paid' })).kind, 'unauthorized');
    assert.equal((await deliver(stripe, 'stripe', { id: 'evt_4', type: 'charge.refunded' })).kind, 'unauthorized');

    const all = kit({ presets: [{ ...GH, events: ['*'] }] });
    assert.match(
      (await runOf(all, 'github', issue, ev('star'))).message,
      /^GitHub star event opened in acme\/app by ada/,
    );
  });

  it('templates: reword an event, word a new one (taken by default), or reword every unworded one ("*")', async () => {
    const k = kit({
      presets: [
        {
          ...GH,
          templates: {
            issues: 'Issue #{{issue.number}} {{action}}: {{issue.title}}',
            deployment: 'Deploy of {{deployment.ref}} to {{deployment.environment}}',
            '*': 'Something happened: {{headers.x-github-event}}',
          },
        },
      ],
    });
    assert.equal((await runOf(k, 'github', issue, ev('issues'))).message, 'Issue #7 opened: Crash on start');
    assert.equal(
      (await runOf(k, 'github', { deployment: { ref: 'v2', environment: 'prod' } }, ev('deployment'))).message,
      'Deploy of v2 to prod',
    );
    assert.match(
      (await runOf(k, 'github', { ...issue, ref: 'refs/heads/x' }, ev('push'))).message,
      /^GitHub push to refs\/heads\/x/,
    );
    assert.equal(
      (await deliver(k, 'github', issue, ev('star'))).kind,
      'unauthorized',
      '"*" rewords, it does not widen events',
    );
  });

  it('a thing without the fields of its key gets a conversation of its own (never a shared, truncated key)', async () => {
    const k = kit({ presets: [GH] });
    const a = await runOf(
      k,
      'github',
      { action: 'opened', issue: { title: 'no number' }, repository: { full_name: 'acme/app' } },
      ev('issues'),
    );
    const b = await runOf(
      k,
      'github',
      { action: 'opened', issue: { title: 'no number' }, repository: { full_name: 'acme/app' } },
      ev('issues'),
    );
    assert.match(a.sessionKey, FRESH_KEY('github'));
    assert.notEqual(a.sessionKey, b.sessionKey);
    // Candidates in order: an organisation's event without a repository is the organisation's conversation.
    const all = kit({ presets: [{ ...GH, events: ['*'] }] });
    assert.equal(
      (await runOf(all, 'github', { action: 'member_added', organization: { login: 'acme' } }, ev('organization')))
        .sessionKey,
      'hook:github:acme',
    );
  });

  it('the entry sets the mapping fields: wake (to the main session), name, agent, delivery, model, timeout, sessionMode', async () => {
    const config = {
      agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
      channels: { log: {} },
    };
    const wake = kit({ presets: [{ ...GH, action: 'wake', wakeMode: 'next-heartbeat' }] }, config);
    const { action } = await actionOf(wake, 'github', issue, ev('issues'));
    assert.equal(action.kind, 'wake');
    const w = action as Extract<HookAction, { kind: 'wake' }>;
    assert.equal(w.sessionKey, 'main');
    assert.equal(w.mode, 'next-heartbeat');
    assert.equal(w.untrusted, true);
    assert.match(w.text, /^GitHub issue #7 opened in acme\/app by ada: Crash on start/);

    const agent = kit(
      {
        presets: [
          {
            ...GH,
            name: 'GH {{repository.full_name}}',
            agentId: 'ops',
            deliver: false,
            channel: 'log',
            to: 'ops-room',
            timeoutSeconds: 30,
            thinking: 'low',
            sessionMode: 'isolated',
          },
        ],
      },
      config,
    );
    const run = await runOf(agent, 'github', issue, ev('issues'));
    assert.deepEqual(
      [run.name, run.agentId, run.deliver, run.channel, run.to, run.timeoutSeconds, run.thinking, run.sessionMode],
      ['GH acme/app', 'ops', false, 'log', 'ops-room', 30, 'low', 'isolated'],
    );
  });

  it("a sessionKey set on the entry is the user's: static as written, templated under the request-key policy", async () => {
    const fixed = kit({ presets: [{ ...GH, sessionKey: 'hook:github-all' }] });
    assert.equal((await runOf(fixed, 'github', issue, ev('issues'))).sessionKey, 'hook:github-all');
    const templated = kit({
      allowRequestSessionKey: true,
      allowedSessionKeyPrefixes: ['hook:'],
      presets: [{ ...GH, sessionKey: 'hook:repo:{{repository.full_name}}' }],
    });
    assert.equal((await runOf(templated, 'github', issue, ev('issues'))).sessionKey, 'hook:repo:acme/app');
  });

  it('handshakes are answered for the preset: GitHub ping, Slack url_verification', async () => {
    const k = kit({ presets: [GH, { use: 'slack', secret: 'slack-secret' }] });
    assert.deepEqual(await deliver(k, 'github', { zen: 'Keep it logically awesome.', hook_id: 1 }, ev('ping')), {
      kind: 'reply',
      mappingId: 'github',
      status: 200,
      body: { ok: true, ping: true },
    });
    assert.deepEqual(await deliver(k, 'slack', { type: 'url_verification', challenge: 'c-123', token: 't' }), {
      kind: 'reply',
      mappingId: 'slack',
      status: 200,
      body: { challenge: 'c-123' },
    });
    assert.equal((await deliver(k, 'github', { zen: 'z' }, { ...ev('ping'), secret: 'wrong' })).kind, 'unauthorized');
  });

  it('a custom mapping on the same path comes first (e.g. one event type of its own); the preset takes the rest', async () => {
    const k = kit({
      mappings: [
        {
          id: 'deploys',
          match: { path: 'github', headers: { 'x-github-event': 'deployment' } },
          messageTemplate: 'deploy {{deployment.ref}}',
          signature: { scheme: 'github', secret: 'gh-secret' },
        },
      ],
      presets: [GH],
    });
    const d = await actionOf(k, 'github', { deployment: { ref: 'v3' } }, ev('deployment'));
    assert.equal(d.result.mappingId, 'deploys');
    assert.equal((await actionOf(k, 'github', issue, ev('issues'))).result.mappingId, 'github');
  });

  it("every preset's sample delivery, signed with the entry's secret, makes one action (what a test send posts)", async () => {
    for (const p of senderPresets()) {
      const secret =
        p.name === 'standard-webhooks' || p.name === 'stripe' ? 'whsec_c2FtcGxlLXNlY3JldA==' : 'sample-secret';
      const k = kit({
        presets: [
          { use: p.name, secret, ...(p.name === 'twilio' ? { url: 'https://hooks.example.com/hooks/twilio' } : {}) },
        ],
      });
      const m = k.ctx.routes.mapped.mappings.find((x) => x.preset === p.name)!;
      const now = Date.now();
      const raw = JSON.stringify(
        p.sample.sentAtField ? { ...p.sample.body, [p.sample.sentAtField]: now } : p.sample.body,
      );
      const headers = { ...p.sample.headers, ...signRequest(m.signature!, Buffer.from(raw), now) };
      const r = await k.routes.resolve({
        ctx: k.ctx,
        subPath: p.name,
        payload: JSON.parse(raw) as Record<string, unknown>,
        rawBody: Buffer.from(raw),
        headers,
        rawHeaders: headers,
        query: new URLSearchParams(signedQuery(m.signature!, Buffer.from(raw)).slice(1)),
        rawQuery: signedQuery(m.signature!, Buffer.from(raw)).slice(1) || undefined,
        now,
        tokenVerified: false,
      });
      assert.equal(r.kind, 'actions', `${p.name}: ${JSON.stringify(r)}`);
      const run = ((r as Extract<typeof r, { kind: 'actions' }>).actions[0] as Extract<HookAction, { kind: 'agent' }>)
        .run;
      assert.ok(run.message.length > 20, p.name);
      assert.ok(run.sessionKey.startsWith(`hook:${p.name}:`), run.sessionKey);
      assert.ok(
        p.setup.steps.length > 0 && p.setup.steps.some((s) => s.includes('<url>')),
        `${p.name}: steps name the URL`,
      );
    }
  });
});
