/** `init` says which token is in force, keeps the config out of git, prints a start command that works. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

const git = (dir: string, ...args: string[]) => spawnSync('git', args, { cwd: dir, encoding: 'utf8' });
const hasGit = git('.', '--version').status === 0;

describe('cli: init', () => {
  it('prints the new token in force and a start command; outside git it writes no .gitignore', async () => {
    const dir = tempDir('hookgate-init-');
    const r = await runCli(['init'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const token = /token: "([A-Za-z0-9_-]{43})"/.exec(readFileSync(join(dir, 'hookgate.json5'), 'utf8'))![1]!;
    assert.match(r.stdout, /hook token now in force/);
    assert.ok(r.stdout.includes(`  ${token}\n`), 'the new token is shown: the user asked for it');
    assert.match(r.stdout, /start it with: npx hookgate serve --config hookgate\.json5/);
    assert.equal(existsSync(join(dir, '.gitignore')), false);
  });

  it("keeps the embedded default's token from ./data/hook-token, so existing senders keep working", async () => {
    const dir = tempDir('hookgate-init-keep-');
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'data/hook-token'), `${TOKEN}\n`);
    const r = await runCli(['init'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(readFileSync(join(dir, 'hookgate.json5'), 'utf8'), new RegExp(`token: "${TOKEN}"`));
    assert.match(r.stdout, /kept the embedded default's, from .*data\/hook-token/);
    assert.ok(!r.stdout.includes(TOKEN), 'a kept token is named by where it is, not printed');
  });

  it('in a git work tree it adds the config to .gitignore, once', async (t) => {
    if (!hasGit) return t.skip('git is not installed');
    const dir = tempDir('hookgate-init-git-');
    assert.equal(git(dir, 'init', '-q').status, 0);
    writeFileSync(join(dir, '.gitignore'), 'node_modules/');
    mkdirSync(join(dir, 'conf'));
    const first = await runCli(['init', 'conf/hg.json5'], { cwd: dir });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /added it to .*\.gitignore \(it holds secrets\)/);
    assert.equal(readFileSync(join(dir, '.gitignore'), 'utf8'), 'node_modules/\n# hookgate config: holds the hook token and other secrets\n/conf/hg.json5\n');
    assert.equal(git(dir, 'check-ignore', '-q', 'conf/hg.json5').status, 0, 'git ignores it');
    const again = await runCli(['init', 'conf/hg.json5', '--force'], { cwd: dir });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /git already ignores it/);
    assert.equal(readFileSync(join(dir, '.gitignore'), 'utf8').split('/conf/hg.json5').length, 2, 'the line is there once');
    assert.match(again.stdout, /npx hookgate serve --config conf\/hg\.json5/);
  });
});
