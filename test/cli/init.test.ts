/**
 * `hookgate init`: the file it writes is the embedded default (hooks, admin listener, store, tokens), it says which
 * token is in force and what it kept, keeps the config out of git without touching a tracked file, and creates the
 * directories it is asked to write into. `init --service`: the systemd unit's layout.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseEnvFile } from '../../src/cli/env-file.js';
import { embeddedConfig } from '../../src/config/defaults.js';
import { type Config, loadConfigFile, validateConfig } from '../../src/config/load.js';
import { type Hookgate, request, runCli, startHookgate } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

const git = (dir: string, ...args: string[]) => spawnSync('git', args, { cwd: dir, encoding: 'utf8' });
const hasGit = git('.', '--version').status === 0;
const mode = (file: string) => statSync(file).mode & 0o777;

/** admin.token as init wrote it into ./hookgate.json5. */
const adminTokenOf = (dir: string) =>
  /admin: \{[^}]*token: "([^"]+)"/.exec(readFileSync(join(dir, 'hookgate.json5'), 'utf8'))![1]!;

/** What a config does, without where it came from. */
const effective = (c: Config) => {
  const { file: _f, dir: _d, warnings: _w, ...rest } = c;
  return rest;
};

describe('cli: init', () => {
  it('prints the new token in force, what it kept, and a start command; outside git it writes no ignore file', async () => {
    const dir = tempDir('hookgate-init-');
    const r = await runCli(['init'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const token = /token: "([A-Za-z0-9_-]{43})"/.exec(readFileSync(join(dir, 'hookgate.json5'), 'utf8'))![1]!;
    assert.match(r.stdout, /hook token now in force/);
    assert.ok(r.stdout.includes(`  ${token}\n`), 'the new token is shown: the user asked for it');
    assert.match(r.stdout, /^kept: .*hooks on .*the admin listener on \(127\.0\.0\.1:18790/m);
    assert.match(r.stdout, /admin token: new, in admin\.token of hookgate\.json5/);
    assert.match(r.stdout, /start it with: npx hookgate serve --config hookgate\.json5/);
    assert.equal(mode(join(dir, 'hookgate.json5')), 0o600);
    assert.ok(!r.stdout.includes(adminTokenOf(dir)), 'the admin token is never printed');
    assert.equal(existsSync(join(dir, 'data')), false, 'init creates no store directory');
    assert.equal(existsSync(join(dir, '.gitignore')), false);
  });

  it("keeps the embedded default's tokens from ./data, so existing senders and operators keep working", async () => {
    const dir = tempDir('hookgate-init-keep-');
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'data/hook-token'), `${TOKEN}\n`);
    writeFileSync(join(dir, 'data/admin-token'), 'a'.repeat(43));
    const r = await runCli(['init'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(readFileSync(join(dir, 'hookgate.json5'), 'utf8'), new RegExp(`token: "${TOKEN}"`));
    assert.match(r.stdout, /kept the embedded default's, from .*data\/hook-token/);
    assert.match(r.stdout, /admin token: kept the embedded default's, from .*data\/admin-token/);
    assert.equal(adminTokenOf(dir), 'a'.repeat(43));
    assert.ok(!r.stdout.includes(TOKEN), 'a kept token is named by where it is, not printed');
  });

  it('writes the embedded default: loaded, the same config as the embedded default run in its directory', async () => {
    const dir = tempDir('hookgate-init-same-');
    const r = await runCli(['init'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const written = loadConfigFile(join(dir, 'hookgate.json5'), { env: {} });
    assert.deepEqual(written.warnings, []);
    const hookToken = written.hooks.token!;
    const adminToken = adminTokenOf(dir);
    assert.equal(written.admin.token, adminToken);
    const embedded = validateConfig(embeddedConfig(hookToken, adminToken), undefined, dir, { env: {} });
    assert.deepEqual(effective(written), effective(embedded));
    assert.equal(written.admin.enabled, true);
  });

  it('a server started with it serves hooks, the admin listener and status', async (t) => {
    const dir = tempDir('hookgate-init-serve-');
    const r = await runCli(['init'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const file = join(dir, 'hookgate.json5');
    const text = readFileSync(file, 'utf8');
    // Port 0: the fixed ports of the default may be taken on a shared machine; nothing else is changed.
    const served = text.replace('port: 18789,', 'port: 0,').replace('port: 18790,', 'port: 0,');
    assert.notEqual(served, text);
    const hg: Hookgate = await startHookgate({ dir, config: served });
    t.after(() => hg.cleanup());
    const listening = await hg.waitForLog((l) => l.msg === 'hookgate listening');
    const adminUrl = listening.adminUrl as string;
    assert.ok(adminUrl, 'the admin listener is on');
    const token = /token: "([A-Za-z0-9_-]{43})"/.exec(text)![1]!;
    const wake = await request(`${hg.url}/hooks/wake`, {
      method: 'POST',
      body: JSON.stringify({ text: 'hi' }),
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });
    assert.equal(wake.status, 200, wake.text);
    const adminToken = adminTokenOf(dir);
    const metrics = await request(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } });
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /hookgate_/);
    assert.equal((await request(`${adminUrl}/metrics`, {})).status, 401);
    const status = await runCli(['status', '--json', '--config', file], { cwd: dir });
    assert.equal(status.code, 0, status.stderr);
    assert.ok(JSON.parse(status.stdout).queues);
  });

  it('creates the directories of the path it is given; a path it cannot create is a clear error', async () => {
    const dir = tempDir('hookgate-init-sub-');
    const r = await runCli(['init', 'sub/dir/x.json5'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(mode(join(dir, 'sub/dir/x.json5')), 0o600);
    writeFileSync(join(dir, 'plain'), '');
    const bad = await runCli(['init', 'plain/x.json5'], { cwd: dir });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /cannot create .*plain for .*x\.json5: (ENOTDIR|EEXIST)/);
    assert.ok(!bad.stderr.includes('    at '), 'no stack trace');
  });

  it("in a git work tree it adds the config to the clone's info/exclude, once, and leaves .gitignore alone", async (t) => {
    if (!hasGit) return t.skip('git is not installed');
    const dir = tempDir('hookgate-init-git-');
    assert.equal(git(dir, 'init', '-q').status, 0);
    writeFileSync(join(dir, '.gitignore'), 'node_modules/');
    mkdirSync(join(dir, 'conf'));
    const first = await runCli(['init', 'conf/hg.json5'], { cwd: dir });
    assert.equal(first.code, 0, first.stderr);
    assert.match(
      first.stdout,
      /git: added it to .*\.git\/info\/exclude \(this clone's own ignore list; \.gitignore is left alone\)/,
    );
    assert.equal(readFileSync(join(dir, '.gitignore'), 'utf8'), 'node_modules/', 'the tracked file is not edited');
    assert.match(readFileSync(join(dir, '.git/info/exclude'), 'utf8'), /\n\/conf\/hg\.json5\n$/);
    assert.equal(git(dir, 'check-ignore', '-q', 'conf/hg.json5').status, 0, 'git ignores it');
    assert.equal(
      git(dir, 'status', '--porcelain', '--', 'conf').stdout,
      '',
      'nothing to commit: the config is ignored',
    );
    const again = await runCli(['init', 'conf/hg.json5', '--force'], { cwd: dir });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /git: already ignored/);
    assert.equal(
      readFileSync(join(dir, '.git/info/exclude'), 'utf8').split('/conf/hg.json5').length,
      2,
      'the line is there once',
    );
    assert.match(again.stdout, /npx hookgate serve --config conf\/hg\.json5/);
  });
});

describe('cli: init --service', () => {
  it('writes a config with no secret (0644) and an environment file with them (0600); loaded with it, the embedded default', async () => {
    const dir = tempDir('hookgate-init-service-');
    const r = await runCli(['init', '--service', '--dir', join(dir, 'etc'), '--state-dir', join(dir, 'state')], {
      cwd: dir,
    });
    assert.equal(r.code, 0, r.stderr);
    const config = join(dir, 'etc/hookgate.json5');
    const envFile = join(dir, 'etc/hookgate.env');
    assert.equal(mode(config), 0o644);
    assert.equal(mode(envFile), 0o600);
    const vars = parseEnvFile(readFileSync(envFile, 'utf8'));
    assert.deepEqual([...vars.keys()], ['HOOKGATE_HOOK_TOKEN', 'HOOKGATE_ADMIN_TOKEN']);
    const text = readFileSync(config, 'utf8');
    for (const v of vars.values())
      assert.ok(!text.includes(v) && !r.stdout.includes(v), 'no secret in the config or the output');
    assert.match(text, /token: \{ env: "HOOKGATE_HOOK_TOKEN" \}/);
    assert.match(text, /token: \{ env: "HOOKGATE_ADMIN_TOKEN" \}/);
    const loaded = loadConfigFile(config, { env: Object.fromEntries(vars) });
    assert.deepEqual(loaded.warnings, []);
    assert.equal(loaded.storage.driver, 'sqlite');
    assert.equal(loaded.storage.driver === 'sqlite' && loaded.storage.path, join(dir, 'state/hookgate.db'));
    const embedded = validateConfig(
      embeddedConfig(vars.get('HOOKGATE_HOOK_TOKEN'), vars.get('HOOKGATE_ADMIN_TOKEN')),
      undefined,
      dir,
      { env: {} },
    );
    assert.deepEqual({ ...effective(loaded), storage: undefined }, { ...effective(embedded), storage: undefined });
    assert.match(r.stdout, /wrote .*hookgate\.env \(mode 0600: HOOKGATE_HOOK_TOKEN, HOOKGATE_ADMIN_TOKEN/);
    assert.match(r.stdout, /--service-user hookgate/);
  });

  it('again with --force: the environment file keeps its tokens and other lines; a missing variable is added', async () => {
    const dir = tempDir('hookgate-init-service-again-');
    const etc = join(dir, 'etc');
    mkdirSync(etc);
    writeFileSync(join(etc, 'hookgate.env'), 'GITHUB_WEBHOOK_SECRET=gh\nHOOKGATE_HOOK_TOKEN=kept-hook-token', {
      mode: 0o600,
    });
    const r = await runCli(['init', '--service', '--dir', etc, '--state-dir', join(dir, 'state')], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /added HOOKGATE_ADMIN_TOKEN to /);
    const vars = parseEnvFile(readFileSync(join(etc, 'hookgate.env'), 'utf8'));
    assert.equal(vars.get('GITHUB_WEBHOOK_SECRET'), 'gh');
    assert.equal(vars.get('HOOKGATE_HOOK_TOKEN'), 'kept-hook-token');
    assert.match(vars.get('HOOKGATE_ADMIN_TOKEN') ?? '', /^[A-Za-z0-9_-]{43}$/);
    const refused = await runCli(['init', '--service', '--dir', etc], { cwd: dir });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /hookgate\.json5 exists; use --force/);
    const forced = await runCli(['init', '--service', '--dir', etc, '--state-dir', join(dir, 'state'), '--force'], {
      cwd: dir,
    });
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /kept .*hookgate\.env: it already sets/);
    assert.deepEqual(parseEnvFile(readFileSync(join(etc, 'hookgate.env'), 'utf8')), vars);
  });

  it('takes its paths from --dir, not from a file argument', async () => {
    const dir = tempDir('hookgate-init-service-usage-');
    const r = await runCli(['init', '--service', 'x.json5'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /with --service, give the directory with --dir/);
    assert.equal(existsSync(join(dir, 'x.json5')), false);
  });
});

describe('cli: config check on the embedded default, before its first start', () => {
  it('does not warn that hooks are off: it says when they turn on', async () => {
    const dir = tempDir('hookgate-check-default-');
    const r = await runCli(['config', 'check'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('warning:'), r.stdout);
    assert.match(
      r.stdout,
      /^note: the embedded default has not run here yet: its hooks turn on at the first `hookgate serve`/m,
    );
    const json = await runCli(['config', 'check', '--json'], { cwd: dir });
    assert.deepEqual(JSON.parse(json.stdout).warnings, []);
    assert.equal(existsSync(join(dir, 'data')), false, 'nothing created');
  });
});
