/**
 * The CLI finds the service the way `serve` does, creates no store and no token, says what
 * it uses, fails naming what it looked for, and reads the store with only the storage section of the config.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../support/server.js';
import { withStoreAt } from '../support/store-at.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

const READ_COMMANDS = [
  ['runs', 'list'],
  ['sessions', 'list'],
  ['deliveries', 'list'],
  ['received'],
  ['runs', 'show', 'x'],
  ['sessions', 'show', 'main'],
];

describe('cli: finding the config and the store', () => {
  it('read commands run in a directory with nothing to read exit 1, name what they looked for and create nothing', async () => {
    const dir = tempDir('hookgate-cli-empty-');
    for (const args of READ_COMMANDS) {
      const r = await runCli(args, { cwd: dir });
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}`);
      assert.match(r.stderr, /nothing to read/);
      assert.match(r.stderr, /\$HOOKGATE_CONFIG \(not set\)/);
      assert.ok(r.stderr.includes(join(dir, 'hookgate.json5')), r.stderr);
      assert.ok(r.stderr.includes(join(dir, 'data/hookgate.db')), r.stderr);
      assert.equal(r.stdout, '');
    }
    assert.equal(existsSync(join(dir, 'data')), false, 'no data/ created');
  });

  it('a config file whose store does not exist yet: exit 1 naming the store and the config, nothing created', async () => {
    const dir = tempDir('hookgate-cli-nostore-');
    writeFileSync(
      join(dir, 'hookgate.json5'),
      `{ storage: { path: "./state/hg.db" }, hooks: { enabled: true, token: "${TOKEN}" } }`,
    );
    const r = await runCli(['runs', 'list'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(join(dir, 'state/hg.db')), r.stderr);
    assert.ok(r.stderr.includes(join(dir, 'hookgate.json5')), r.stderr);
    assert.equal(existsSync(join(dir, 'state')), false);
  });

  it('--config naming a missing file is refused by name', async () => {
    const dir = tempDir('hookgate-cli-missing-');
    const r = await runCli(['deliveries', 'list', '--config', 'nope.json5'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /config file .*nope\.json5 \(from --config\) does not exist/);
    const env = await runCli(['received'], { cwd: dir, env: { HOOKGATE_CONFIG: join(dir, 'other.json5') } });
    assert.match(env.stderr, /other\.json5 \(from \$HOOKGATE_CONFIG\) does not exist/);
  });

  it("reads the embedded default's existing store and says so with --verbose, creating no token", async () => {
    const dir = tempDir('hookgate-cli-default-');
    await withStoreAt(dir, async () => undefined); // the store a first `serve` would have made
    const r = await runCli(['runs', 'list', '--verbose'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '(none)\n');
    assert.equal(r.stderr, `hookgate: no config file: the embedded default; store ${join(dir, 'data/hookgate.db')}\n`);
    assert.equal(existsSync(join(dir, 'data/hook-token')), false);
    const quiet = await runCli(['runs', 'list', '--json'], { cwd: dir });
    assert.equal(quiet.stderr, '', 'nothing on stderr when it is not a terminal and --verbose is not given');
    assert.deepEqual(JSON.parse(quiet.stdout), []);
  });

  it('send without a token exits 1 naming where it looked, and writes no token file', async () => {
    const dir = tempDir('hookgate-cli-notoken-');
    const r = await runCli(['send', 'wake', 'hi'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no hook token/);
    assert.ok(r.stderr.includes(join(dir, 'data/hook-token')), r.stderr);
    assert.equal(existsSync(join(dir, 'data')), false);

    writeFileSync(join(dir, 'hg.json5'), '{ hooks: { enabled: false } }');
    const noConfigToken = await runCli(['send', 'wake', 'hi', '--config', 'hg.json5'], { cwd: dir });
    assert.equal(noConfigToken.code, 1);
    assert.match(noConfigToken.stderr, /hooks\.token is not set in .*hg\.json5/);
  });

  it("send uses the embedded default's token file, or $HOOKGATE_TOKEN, and says which with --verbose", async () => {
    const dir = tempDir('hookgate-cli-tokenfile-');
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'data/hook-token'), `${TOKEN}\n`);
    // Port 9 (discard) refuses: the point is which token and URL were chosen, not the answer.
    const r = await runCli(['send', 'wake', 'hi', '--verbose', '--url', 'http://127.0.0.1:9'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`token from ${join(dir, 'data/hook-token')}`));
    assert.match(r.stderr, /cannot reach hookgate at http:\/\/127\.0\.0\.1:9\/hooks/);
    assert.ok(!r.stderr.includes(TOKEN), 'the token itself is never printed');
    const env = await runCli(['send', 'wake', 'hi', '--verbose', '--url', 'http://127.0.0.1:9'], {
      cwd: dir,
      env: { HOOKGATE_TOKEN: 'from-env-0123456789abcdef' },
    });
    assert.match(env.stderr, /token from \$HOOKGATE_TOKEN/);
  });

  it('read commands need only the storage section: an unset secret elsewhere does not stop them', async () => {
    const dir = tempDir('hookgate-cli-secrets-');
    await withStoreAt(dir, async () => undefined);
    const file = join(dir, 'hookgate.json5');
    writeFileSync(
      file,
      `{
        storage: { path: "\${HG_DATA_DIR}/hookgate.db" },
        hooks: { enabled: true, token: "\${HG_TEST_TOKEN_UNSET}",
          mappings: [{ match: { path: "github" }, signature: { scheme: "github", secret: { env: "GITHUB_WEBHOOK_SECRET_UNSET" } } }] },
      }`,
    );
    const env = { HG_DATA_DIR: join(dir, 'data') };
    for (const args of READ_COMMANDS.slice(0, 4)) {
      const r = await runCli([...args, '-c', file, '--json'], { env });
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.deepEqual(JSON.parse(r.stdout), []);
    }
    const check = await runCli(['config', 'check', '-c', file], { env });
    assert.equal(check.code, 1, 'config check still checks everything');
    assert.match(check.stderr, /GITHUB_WEBHOOK_SECRET_UNSET/);
    const unset = await runCli(['runs', 'list', '-c', file]);
    assert.equal(unset.code, 1, 'a problem in the storage section is reported by key path');
    assert.match(unset.stderr, /storage\.path: environment variable HG_DATA_DIR is not set/);
    assert.doesNotMatch(unset.stderr, /GITHUB_WEBHOOK_SECRET_UNSET|HG_TEST_TOKEN_UNSET/);
    writeFileSync(file, '{ storage: { path: "./data/hookgate.db", bogus: 1 } }');
    const bad = await runCli(['runs', 'list', '-c', file]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /storage: unknown key: bogus/);
  });
});
