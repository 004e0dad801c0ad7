/**
 * Config-time checks of mappings (src/config/validate.ts, src/config/schema/hooks.ts): errors by key path, and the
 * warnings for mappings that can never work as written.
 */
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { assertIssue, parse } from '../config/helpers.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

const hooks = (h: Record<string, unknown>) => ({ hooks: { enabled: true, token: TOKEN, ...h } });

describe('mapping config errors (by key path)', () => {
  let dir: string;
  before(() => {
    dir = tempDir('hookgate-mappings-config-');
    mkdirSync(join(dir, 'hooks/transforms'), { recursive: true });
    mkdirSync(join(dir, 'outside'), { recursive: true });
    writeFileSync(join(dir, 'hooks/transforms/ok.mjs'), 'export default () => null;\n');
    writeFileSync(join(dir, 'outside/evil.mjs'), 'export default () => ({ message: "evil" });\n');
    symlinkSync(join(dir, 'outside/evil.mjs'), join(dir, 'hooks/transforms/escape.mjs'));
  });

  it('duplicate mapping ids', () => {
    assertIssue(
      hooks({
        mappings: [
          { id: 'a', messageTemplate: 'm' },
          { id: 'b', messageTemplate: 'm' },
          { id: 'a', messageTemplate: 'm' },
        ],
      }),
      'hooks.mappings[2].id',
      'duplicate mapping id "a" (also hooks.mappings[0].id)',
    );
  });

  it('unknown keys anywhere in a mapping', () => {
    assertIssue(
      hooks({ mappings: [{ messageTemplate: 'm', sesionKey: 'x' }] }),
      'hooks.mappings[0]',
      'unknown key: sesionKey (did you mean "sessionKey"?)',
    );
    assertIssue(
      hooks({ mappings: [{ messageTemplate: 'm', signature: { scheme: 'github', secret: 's', tolerance: 1 } }] }),
      'hooks.mappings[0].signature',
    );
    assertIssue(
      hooks({ mappings: [{ messageTemplate: 'm', signature: { scheme: 'bitbucket', secret: 's' } }] }),
      'hooks.mappings[0].signature.scheme',
    );
  });

  it("signature.url: required for twilio, an error on any other scheme, at the key's path", () => {
    const twilio = (signature: Record<string, unknown>) =>
      hooks({ mappings: [{ messageTemplate: 'm', signature: { scheme: 'twilio', secret: 's', ...signature } }] });
    assertIssue(
      twilio({}),
      'hooks.mappings[0].signature.url',
      'required for scheme "twilio": the public URL Twilio calls (and signs)',
    );
    assertIssue(
      twilio({ url: 'hooks.example.com/hooks/twilio' }),
      'hooks.mappings[0].signature.url',
      /absolute http\(s\) URL/,
    );
    assertIssue(
      twilio({ url: 'https://hooks.example.com/hooks/twilio?a=1' }),
      'hooks.mappings[0].signature.url',
      /query string/,
    );
    parse(twilio({ url: 'https://hooks.example.com/hooks/twilio' }));
    const other = hooks({
      mappings: [
        { messageTemplate: 'm', signature: { scheme: 'shopify', secret: 's', url: 'https://hooks.example.com/x' } },
      ],
    });
    assertIssue(other, 'hooks.mappings[0].signature.url', 'only applies to scheme "twilio"');
  });

  it('a bearer secret that is also a hook token is an error (that token would open every route)', () => {
    const bearer = (secrets: string[], extra: Record<string, unknown> = {}) =>
      hooks({
        ...extra,
        mappings: [{ match: { path: 'alerts' }, messageTemplate: 'm', signature: { scheme: 'bearer', secrets } }],
      });
    assertIssue(
      bearer(['a-bearer-secret-of-its-own', TOKEN]),
      'hooks.mappings[0].signature',
      /must not be a hook token/,
    );
    const second = 'a-second-hook-token-0123456789abcdef';
    assertIssue(
      bearer([second], { tokens: [{ id: 'ci', token: second }] }),
      'hooks.mappings[0].signature',
      /must not be a hook token/,
    );
    parse(bearer(['a-bearer-secret-of-its-own']));
  });

  it('match.headers: header names (lower-cased), string values; other keys in match are errors', () => {
    const c = parse(
      hooks({
        mappings: [{ match: { path: 'gh', headers: { 'X-GitHub-Event': 'pull_request' } }, messageTemplate: 'm' }],
      }),
    );
    assert.deepEqual(c.hooks.mappings[0]!.match!.headers, { 'x-github-event': 'pull_request' });
    assertIssue(
      hooks({ mappings: [{ match: { path: 'gh', header: { a: 'b' } }, messageTemplate: 'm' }] }),
      'hooks.mappings[0].match',
      'unknown key: header (did you mean "headers"?)',
    );
    assertIssue(
      hooks({ mappings: [{ match: { headers: { 'bad name': 'x' } }, messageTemplate: 'm' }] }),
      'hooks.mappings[0].match.headers.bad name',
      'must be an HTTP header name',
    );
    assertIssue(
      hooks({ mappings: [{ match: { headers: { 'x-a': 1 } }, messageTemplate: 'm' }] }),
      'hooks.mappings[0].match.headers.x-a',
    );
  });

  it('a transform module that leaves the transforms directory through a symlink, or by ..', () => {
    parse(hooks({ mappings: [{ transform: { module: 'ok.mjs' } }] }), {}, dir);
    assertIssue(
      hooks({ mappings: [{ transform: { module: 'escape.mjs' } }] }),
      'hooks.mappings[0].transform.module',
      /symlink/,
      {},
      dir,
    );
    assertIssue(
      hooks({ mappings: [{ transform: { module: '../../outside/evil.mjs' } }] }),
      'hooks.mappings[0].transform.module',
      /\.\./,
      {},
      dir,
    );
  });
});

describe('mapping config warnings', () => {
  const warningsOf = (h: Record<string, unknown>) => parse(hooks(h)).warnings;

  it('match.path wake / agent never matches (direct routes win)', () => {
    const w = warningsOf({ mappings: [{ match: { path: 'wake' }, action: 'wake', textTemplate: 't' }] });
    assert.ok(
      w.some((x) => /hooks\.mappings\[0\]: match\.path "wake" never matches/.test(x)),
      w.join('\n'),
    );
  });

  it('a mapping shadowed by an earlier one', () => {
    const w = warningsOf({
      mappings: [
        { match: { path: 'p' }, messageTemplate: 'a' },
        { match: { path: 'p', source: 's' }, messageTemplate: 'b' },
        { match: { path: 'q', source: 's' }, messageTemplate: 'c' },
        { match: { path: 'q' }, messageTemplate: 'd' },
      ],
    });
    assert.ok(
      w.some((x) => x.startsWith('hooks.mappings[1] never matches: hooks.mappings[0]')),
      w.join('\n'),
    );
    assert.ok(
      !w.some((x) => x.startsWith('hooks.mappings[3] never matches')),
      'a source-specific mapping does not shadow a general one',
    );
  });

  it('shadowing counts match.headers: a header-narrowed mapping shadows only mappings requiring the same headers', () => {
    const w = warningsOf({
      mappings: [
        { match: { path: 'gh', headers: { 'x-github-event': 'pull_request' } }, messageTemplate: 'a' },
        { match: { path: 'gh', headers: { 'X-GitHub-Event': 'issues' } }, messageTemplate: 'b' },
        { match: { path: 'gh' }, messageTemplate: 'c' },
        { match: { path: 'gh', headers: { 'x-github-event': 'pull_request', 'x-other': '1' } }, messageTemplate: 'd' },
      ],
    });
    assert.ok(!w.some((x) => /hooks\.mappings\[[12]\] never matches/.test(x)), w.join('\n'));
    assert.ok(
      w.some((x) => x.startsWith('hooks.mappings[3] never matches: hooks.mappings[0]')),
      w.join('\n'),
    );
  });

  it('a templated sessionKey without allowRequestSessionKey is an error now, for agent and wake mappings (the gmail preset needs no opt-in)', () => {
    const msg = /a templated sessionKey needs hooks\.allowRequestSessionKey: true/;
    assertIssue(
      hooks({
        allowedSessionKeyPrefixes: ['hook:'],
        presets: ['gmail'],
        mappings: [{ match: { path: 'gh' }, messageTemplate: 'm', sessionKey: 'hook:gh:{{id}}' }],
      }),
      'hooks.mappings[0].sessionKey',
      msg,
    );
    assertIssue(
      hooks({
        allowedSessionKeyPrefixes: ['hook:'],
        mappings: [{ action: 'wake', textTemplate: 't', sessionKey: 'hook:{{room}}' }],
      }),
      'hooks.mappings[0].sessionKey',
      msg,
    );
    const ok = warningsOf({
      allowedSessionKeyPrefixes: ['hook:'],
      allowRequestSessionKey: true,
      presets: ['gmail'],
      mappings: [{ match: { path: 'gh' }, messageTemplate: 'm', sessionKey: 'hook:gh:{{id}}' }],
    });
    assert.ok(!ok.some((x) => /allowRequestSessionKey/.test(x)), ok.join('\n'));
    // The gmail preset alone (its templated key lives in hook:gmail:) is accepted without the opt-in.
    assert.ok(parse(hooks({ presets: ['gmail'] })));
  });

  it('sessionMode persistent without any key is an error (unless a transform may supply one)', () => {
    assertIssue(
      hooks({ mappings: [{ messageTemplate: 'm', sessionMode: 'persistent' }] }),
      'hooks.mappings[0].sessionMode',
      /needs a session key/,
    );
    assert.ok(parse(hooks({ mappings: [{ messageTemplate: 'm', sessionMode: 'persistent', sessionKey: 'hook:ci' }] })));
    assert.ok(
      parse(hooks({ defaultSessionKey: 'hook:all', mappings: [{ messageTemplate: 'm', sessionMode: 'persistent' }] })),
    );
  });
});
