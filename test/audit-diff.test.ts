import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffConfigs, MASK, MAX_CHANGES, maskSecrets } from '../src/audit-diff.js';

const SECRET = 'hunter2-super-secret-value';

describe('maskSecrets', () => {
  it('masks strings under secret-looking keys, in headers and env, and URL passwords; keeps numbers, booleans, ids', () => {
    const masked = maskSecrets({
      hooks: {
        token: SECRET,
        path: '/hooks',
        tokens: [{ id: 'ci', token: SECRET, notAfter: '2027-01-01' }],
        idempotencyMaxKeys: 100,
      },
      admin: { token: SECRET, enabled: true },
      storage: { url: `postgres://hookgate:${SECRET}@db:5432/hookgate` },
      models: { providers: { openai: { apiKey: SECRET, headers: { 'X-Custom': SECRET }, env: { SOME_VAR: SECRET } } } },
      channels: {
        telegram: { botToken: SECRET },
        slack: { signingSecret: SECRET, clientSecret: SECRET, password: SECRET },
      },
      hooksMapping: { sessionKey: 'hook:github', privateKey: SECRET, authorization: SECRET },
    });
    assert.equal(JSON.stringify(masked).includes(SECRET), false);
    const m = masked as any;
    assert.equal(m.hooks.token, MASK);
    assert.deepEqual(m.hooks.tokens, [{ id: 'ci', token: MASK, notAfter: '2027-01-01' }]);
    assert.equal(m.hooks.path, '/hooks');
    assert.equal(m.hooks.idempotencyMaxKeys, 100);
    assert.equal(m.admin.enabled, true);
    assert.equal(m.storage.url, `postgres://hookgate:${MASK}@db:5432/hookgate`);
    assert.equal(m.models.providers.openai.headers['X-Custom'], MASK);
    assert.equal(m.models.providers.openai.env.SOME_VAR, MASK);
    assert.equal(m.hooksMapping.sessionKey, 'hook:github', 'a session key is a routing name, not a secret');
  });

  it('masks the path and query secrets of every URL-valued string, under any key, and URLs inside text', () => {
    const url = 'http://127.0.0.1:21099/services/T0/B0/PATHSECRET456?key=URLSECRET123&sig=QSIG789';
    const masked = maskSecrets({
      channels: { webhook: { targets: { recv: { url } } } },
      note: `posts to ${url} on failure`,
      list: [url],
    }) as any;
    const shown = 'http://127.0.0.1:21099/services/***/***/***?key=***&sig=***';
    assert.equal(masked.channels.webhook.targets.recv.url, shown);
    assert.equal(masked.note, `posts to ${shown} on failure`);
    assert.deepEqual(masked.list, [shown]);
    const diff = diffConfigs(
      { channels: { webhook: { targets: { recv: { url: 'http://127.0.0.1:21099/recv' } } } } },
      { channels: { webhook: { targets: { recv: { url } } } } },
    );
    assert.deepEqual(diff.changes, [
      { path: 'channels.webhook.targets.recv.url', op: 'changed', from: 'http://127.0.0.1:21099/recv', to: shown },
    ]);
    for (const secret of ['PATHSECRET456', 'URLSECRET123', 'QSIG789'])
      assert.equal(JSON.stringify([masked, diff]).includes(secret), false, secret);
  });

  it('shortens long strings', () => {
    const s = maskSecrets({ template: 'x'.repeat(1000) }) as { template: string };
    assert.ok(s.template.length < 250);
    assert.match(s.template, /1000 chars/);
  });
});

describe('diffConfigs', () => {
  const base = {
    file: '/etc/hookgate.json5',
    dir: '/etc',
    warnings: [],
    gateway: { port: 18789 },
    hooks: {
      token: SECRET,
      receivedRetentionDays: 7,
      mappings: [
        { id: 'github', action: 'agent' },
        { id: 'stripe', action: 'wake' },
      ],
    },
    storage: { driver: 'postgres', url: `postgres://u:${SECRET}@h/db` },
  };

  it('names changes by key path; ignores file, dir and warnings; no secret anywhere', () => {
    const next = {
      ...base,
      warnings: ['something'],
      gateway: { port: 18790 },
      hooks: { ...base.hooks, token: 'another-secret-token', receivedRetentionDays: 14 },
      storage: { driver: 'postgres', url: 'postgres://u:other-pass@h/db' },
    };
    const d = diffConfigs(base, next);
    assert.deepEqual(d.changes, [
      { path: 'gateway.port', op: 'changed', from: 18789, to: 18790 },
      { path: 'hooks.token', op: 'changed', from: MASK, to: MASK },
      { path: 'hooks.receivedRetentionDays', op: 'changed', from: 7, to: 14 },
      { path: 'storage.url', op: 'changed', from: `postgres://u:${MASK}@h/db`, to: `postgres://u:${MASK}@h/db` },
    ]);
    assert.deepEqual(d.tokens, [{ path: 'hooks.token', added: [], removed: [], replaced: [], op: 'changed' }]);
    const text = JSON.stringify(d);
    for (const s of [SECRET, 'another-secret-token', 'other-pass']) assert.equal(text.includes(s), false, s);
  });

  it('the same config: no change', () => {
    assert.deepEqual(diffConfigs(base, structuredClone(base)), { changes: [], more: 0, tokens: [] });
  });

  it('lists of objects with an id are compared by id (added, removed, changed inside)', () => {
    const next = {
      ...base,
      hooks: {
        ...base.hooks,
        mappings: [
          { id: 'stripe', action: 'agent' },
          { id: 'gmail', action: 'agent' },
        ],
      },
    };
    const d = diffConfigs(base, next);
    assert.deepEqual(d.changes, [
      { path: 'hooks.mappings[id=github]', op: 'removed', from: { id: 'github', action: 'agent' } },
      { path: 'hooks.mappings[id=stripe].action', op: 'changed', from: 'wake', to: 'agent' },
      { path: 'hooks.mappings[id=gmail]', op: 'added', to: { id: 'gmail', action: 'agent' } },
    ]);
    assert.deepEqual(d.tokens, []);
  });

  it('a token list: the ids added, removed and replaced are named, the tokens never', () => {
    const a = {
      hooks: {
        tokens: [
          { id: 'old', token: 'tok-old-1234567890' },
          { id: 'ci', token: 'tok-ci-1234567890' },
        ],
      },
    };
    const b = {
      hooks: {
        tokens: [
          { id: 'ci', token: 'tok-ci-rotated-000' },
          { id: 'new', token: 'tok-new-1234567890', notAfter: '2027-01-01' },
        ],
      },
    };
    const d = diffConfigs(a, b);
    assert.deepEqual(d.tokens, [{ path: 'hooks.tokens', added: ['new'], removed: ['old'], replaced: ['ci'] }]);
    assert.deepEqual(d.changes, [
      { path: 'hooks.tokens[id=old]', op: 'removed', from: { id: 'old', token: MASK } },
      { path: 'hooks.tokens[id=ci].token', op: 'changed', from: MASK, to: MASK },
      { path: 'hooks.tokens[id=new]', op: 'added', to: { id: 'new', token: MASK, notAfter: '2027-01-01' } },
    ]);
    assert.equal(/tok-/.test(JSON.stringify(d)), false);
  });

  it('a token list that appears whole, and a single token added: both are token changes', () => {
    const d = diffConfigs(
      { admin: {} },
      { admin: { token: 'adm-secret-xyz', tokens: [{ id: 'a', token: 'adm-secret-abc' }] } },
    );
    assert.deepEqual(d.tokens, [
      { path: 'admin.token', added: [], removed: [], replaced: [], op: 'added' },
      { path: 'admin.tokens', added: ['a'], removed: [], replaced: [] },
    ]);
    assert.equal(JSON.stringify(d).includes('adm-secret'), false);
  });

  it('lists without ids are compared by index; a list of plain strings under a secret key is masked', () => {
    const d = diffConfigs(
      { gateway: { trustedProxies: ['10.0.0.1'] }, x: { apiKeys: ['k1-secret'] } },
      { gateway: { trustedProxies: ['10.0.0.1', '10.0.0.2'] }, x: { apiKeys: ['k2-secret'] } },
    );
    assert.deepEqual(d.changes, [
      { path: 'gateway.trustedProxies[1]', op: 'added', to: '10.0.0.2' },
      { path: 'x.apiKeys[0]', op: 'changed', from: MASK, to: MASK },
    ]);
  });

  it(`at most ${MAX_CHANGES} changes; the rest counted`, () => {
    const a = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, i]));
    const b = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`k${i}`, i + 1]));
    const d = diffConfigs({ x: a }, { x: b });
    assert.equal(MAX_CHANGES, 100);
    assert.equal(d.changes.length, MAX_CHANGES);
    assert.equal(d.more, 50);
  });
});
