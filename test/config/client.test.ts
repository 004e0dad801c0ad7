/** The clients' view of the config (src/config/client.ts): the listener keys alone, and where a secret comes from. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadClientConfig, secretSourceOf } from '../../src/config/client.js';
import type { ConfigError } from '../../src/errors.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

describe('config: what a client reads', () => {
  const dir = tempDir();
  after(() => removeDir(dir));
  const write = (name: string, text: string) => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  it('reads the listener keys with their defaults; an unset variable elsewhere is not read', () => {
    const file = write(
      'a.json5',
      '{ hooks: { token: "${HG_T}", path: "in/", presets: [{ use: "github", secret: { env: "HG_UNSET" } }] }, admin: { token: { file: "admin-token" } } }',
    );
    writeFileSync(join(dir, 'admin-token'), 'adm\n');
    const hooks = loadClientConfig(file, 'hooks', { HG_T: 'tok' });
    assert.deepEqual(hooks.gateway, { bind: '127.0.0.1', port: 18789 });
    assert.equal(hooks.hooks.path, '/in');
    assert.equal(hooks.hooks.token, 'tok');
    assert.equal(loadClientConfig(file, 'admin', {}).admin.token, 'adm');
  });

  it('a problem in a key it reads is reported by key path', () => {
    const file = write(
      'b.json5',
      '{ gateway: { port: 70000, bind: " " }, hooks: { path: "/", tokens: [{ id: "a", token: "t", notAfter: "tomorrow" }] } }',
    );
    assert.throws(
      () => loadClientConfig(file, 'hooks', {}),
      (err: ConfigError) =>
        ['gateway.port', 'gateway.bind', 'hooks.path', 'hooks.tokens[0].notAfter'].every((p) =>
          err.issues.some((i) => i.path === p),
        ),
    );
  });

  it('names where the admin token comes from: its file, its variable, the key, or the list', () => {
    const cases: Array<[string, RegExp]> = [
      [
        '{ admin: { token: { file: "data/admin-token" } } }',
        /^\/.*\/data\/admin-token \(admin\.token of .*c\.json5\)$/,
      ],
      ['{ admin: { token: { env: "HG_ADMIN" } } }', /^\$HG_ADMIN \(admin\.token of /],
      ['{ admin: { token: "${HG_ADMIN}" } }', /^\$HG_ADMIN \(admin\.token of /],
      ['{ admin: { token: "inline" } }', /^admin\.token in /],
      ['{ admin: { tokens: [{ id: "a", token: "t" }] } }', /^admin\.tokens in /],
    ];
    for (const [text, expected] of cases) assert.match(secretSourceOf(write('c.json5', text), 'admin'), expected, text);
  });
});
