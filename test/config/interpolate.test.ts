/**
 * `${ENV}` substitution, `$${ENV}` literals, and the secret references `{ env: NAME }` / `{ file: path }`.
 * The environment is always passed explicitly: nothing here reads the real one.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { interpolate } from '../../src/config/interpolate.js';
import { loadConfigFile } from '../../src/config/load.js';
import type { ConfigIssue } from '../../src/errors.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';
import { assertIssue, configError, issuesOf, NO_DIR, parse } from './helpers.js';

const run = (value: unknown, env: NodeJS.ProcessEnv, dir = NO_DIR) => {
  const issues: ConfigIssue[] = [];
  const out = interpolate(value, env, dir, issues);
  return { out, issues };
};

describe('${ENV} substitution', () => {
  it('replaces variables in every string, nested in objects and arrays', () => {
    const { out, issues } = run(
      { a: '${A}', b: { c: ['x-${B}-y', 'plain'] }, d: 'pre ${A}${B} post' },
      { A: 'alpha', B: 'beta' },
    );
    assert.deepEqual(issues, []);
    assert.deepEqual(out, { a: 'alpha', b: { c: ['x-beta-y', 'plain'] }, d: 'pre alphabeta post' });
  });

  it('through the loader: a token and a provider key from the environment', () => {
    const c = parse(
      `{ hooks: { enabled: true, token: "\${HOOK_TOKEN}" },
         models: { providers: { local: { api: "openai-chat", baseUrl: "http://\${HOST}:11434/v1", apiKey: "\${KEY}" } } } }`,
      { HOOK_TOKEN: TOKEN, HOST: '10.0.0.5', KEY: 'sk-1' },
    );
    assert.equal(c.hooks.token, TOKEN);
    const p = c.models.providers.local;
    assert.ok(p && p.api === 'openai-chat');
    assert.equal(p.baseUrl, 'http://10.0.0.5:11434/v1');
    assert.equal(p.apiKey, 'sk-1');
  });

  it('an unset variable is a problem at its key path, never an empty string', () => {
    assertIssue({ hooks: { token: '${NOPE}' } }, 'hooks.token', 'environment variable NOPE is not set');
    assertIssue(
      { hooks: { mappings: [{ messageTemplate: 'm' }, { messageTemplate: 'hi ${WHO}' }] } },
      'hooks.mappings[1].messageTemplate',
      'environment variable WHO is not set',
    );
  });

  it('every unset variable is reported, each at its own path', () => {
    const issues = issuesOf({ hooks: { token: '${A1} ${A2}' }, admin: { token: '${A3}' } });
    assert.deepEqual(
      issues.filter((i) => /is not set/.test(i.message)),
      [
        { path: 'hooks.token', message: 'environment variable A1 is not set' },
        { path: 'hooks.token', message: 'environment variable A2 is not set' },
        { path: 'admin.token', message: 'environment variable A3 is not set' },
      ],
    );
  });

  it('one unset variable is one problem: the schema and cross-key rules do not repeat it at that key', () => {
    const signed = {
      hooks: {
        enabled: true,
        token: TOKEN,
        mappings: [
          {
            match: { path: 'gh' },
            messageTemplate: 'm',
            signature: { scheme: 'github', secret: '${GITHUB_WEBHOOK_SECRET}' },
          },
        ],
      },
    };
    assert.deepEqual(issuesOf(signed), [
      { path: 'hooks.mappings[0].signature.secret', message: 'environment variable GITHUB_WEBHOOK_SECRET is not set' },
    ]);
    // hooks.enabled requires hooks.token would name the same hole again; the unrelated path problem is still listed.
    assert.deepEqual(issuesOf({ hooks: { enabled: true, token: '${HOOK_TOKEN}', path: '/' } }), [
      { path: 'hooks.token', message: 'environment variable HOOK_TOKEN is not set' },
      { path: 'hooks.path', message: "hooks.path may not be '/'" },
    ]);
  });

  it('uses only the environment it is given (not process.env)', () => {
    // PATH is set in any real environment; with env {} it must still be "not set".
    assertIssue({ hooks: { token: '${PATH}' } }, 'hooks.token', 'environment variable PATH is not set', {});
  });

  it('a variable set to the empty string substitutes as empty (it is set)', () => {
    const { out, issues } = run({ a: 'x${E}y' }, { E: '' });
    assert.deepEqual(issues, []);
    assert.deepEqual(out, { a: 'xy' });
  });

  it('$${VAR} is a literal ${VAR}, and does not need VAR to be set', () => {
    const { out, issues } = run({ a: 'cost: $${PRICE}', b: '$${X}${X}' }, { X: 'x' });
    assert.deepEqual(issues, []);
    assert.deepEqual(out, { a: 'cost: ${PRICE}', b: '${X}x' });
  });

  it('text that is not a ${NAME} reference is left alone', () => {
    const input = { a: '$A', b: '${A', c: '${1X}', d: '${}', e: '{A}', f: '${A-B}', g: 'price $5' };
    const { out, issues } = run(input, {});
    assert.deepEqual(issues, []);
    assert.deepEqual(out, input);
  });

  it('numbers, booleans and null pass through; keys are not substituted', () => {
    const { out, issues } = run({ n: 1, t: true, z: null, '${K}': 'v' }, { K: 'k' });
    assert.deepEqual(issues, []);
    assert.deepEqual(out, { n: 1, t: true, z: null, '${K}': 'v' });
  });
});

describe('{ env: NAME } secrets', () => {
  it('becomes the variable value', () => {
    const c = parse({ hooks: { enabled: true, token: { env: 'HOOK_TOKEN' } } }, { HOOK_TOKEN: TOKEN });
    assert.equal(c.hooks.token, TOKEN);
  });

  it('works inside arrays, by index', () => {
    const { out, issues } = run({ list: ['a', { env: 'B' }, { env: 'C' }] }, { B: 'b' });
    assert.deepEqual(out, { list: ['a', 'b', undefined] });
    assert.deepEqual(issues, [{ path: 'list[2]', message: 'environment variable C is not set' }]);
  });

  it('an unset or empty variable is a problem at the key path', () => {
    assertIssue({ hooks: { token: { env: 'NOPE' } } }, 'hooks.token', 'environment variable NOPE is not set');
    assertIssue({ hooks: { token: { env: 'EMPTY' } } }, 'hooks.token', 'environment variable EMPTY is not set', {
      EMPTY: '',
    });
  });

  it('only an object with exactly the one key "env" (a string) is a reference', () => {
    const input = { a: { env: 'A', other: 1 }, b: { env: 5 } };
    const { out, issues } = run(input, { A: 'x' });
    assert.deepEqual(issues, []);
    assert.deepEqual(out, input);
    // …and such an object where a string is expected is a schema problem.
    assertIssue({ hooks: { token: { env: 'A', x: 1 } } }, 'hooks.token', undefined, { A: 'x' });
  });
});

describe('{ file: path } secrets', () => {
  let dir: string;
  before(() => {
    dir = tempDir();
    mkdirSync(join(dir, 'secrets'), { recursive: true });
    writeFileSync(join(dir, 'secrets', 'hook-token'), `  ${TOKEN}\n\n`);
    writeFileSync(join(dir, 'secrets', 'admin'), 'admin-secret-0123456789');
    mkdirSync(join(dir, 'conf'), { recursive: true });
  });

  it('becomes the file content, trimmed; relative to the config dir', () => {
    const c = parse({ hooks: { enabled: true, token: { file: 'secrets/hook-token' } } }, {}, dir);
    assert.equal(c.hooks.token, TOKEN);
  });

  it('relative to the config file directory, not the cwd', () => {
    const file = join(dir, 'conf', 'hookgate.json5');
    writeFileSync(file, '{ hooks: { enabled: true, token: { file: "../secrets/hook-token" } } }');
    assert.notEqual(process.cwd(), join(dir, 'conf'));
    assert.equal(loadConfigFile(file, { env: {} }).hooks.token, TOKEN);
  });

  it('an absolute path works', () => {
    const c = parse({ admin: { token: { file: join(dir, 'secrets', 'admin') } } }, {}, NO_DIR);
    assert.equal(c.admin.token, 'admin-secret-0123456789');
  });

  it('${VAR} in the path is substituted', () => {
    const c = parse({ hooks: { token: { file: '${SECRETS}/hook-token' } } }, { SECRETS: join(dir, 'secrets') });
    assert.equal(c.hooks.token, TOKEN);
  });

  it('a missing file is a problem at the key path, naming the resolved file', () => {
    const issues = assertIssue({ hooks: { token: { file: 'secrets/nope' } } }, 'hooks.token', undefined, {}, dir);
    const msg = issues.find((i) => i.path === 'hooks.token')!.message;
    assert.equal(msg, `cannot read secret file ${join(dir, 'secrets', 'nope')}: ENOENT`);
  });

  it('an unreadable file (here: a directory) is a problem at the key path', () => {
    assertIssue(
      { hooks: { token: { file: 'secrets' } } },
      'hooks.token',
      /^cannot read secret file .*: EISDIR$/,
      {},
      dir,
    );
  });

  it('the secret value never appears in a problem message', () => {
    const err = configError(() =>
      parse({ hooks: { token: { file: 'secrets/hook-token' } }, admin: { enabled: 'x' } }, {}, dir),
    );
    assert.doesNotMatch(err.message, new RegExp(TOKEN));
  });

  it('secrets and substitution problems are reported with the other problems', () => {
    const issues = issuesOf(
      { hooks: { token: { file: 'secrets/nope' } }, admin: { token: { env: 'NOPE' } }, gateway: { port: 'x' } },
      {},
      dir,
    );
    assert.deepEqual(issues.map((i) => i.path).sort(), ['admin.token', 'gateway.port', 'hooks.token']);
  });
});
