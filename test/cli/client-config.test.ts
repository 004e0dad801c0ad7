/**
 * A command reads only the config it uses: `send` the hook listener's keys, `tail` the admin listener's, `status`
 * the storage section. A signing secret set only in the service's environment is no error for them; `config check`
 * (like `serve`) still names it. And the program's options go before or after the subcommand.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { CLI, type Hookgate, runCli, startHookgate } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const ADMIN = 'test-admin-token-0123456789abcdef';
const SECRET_VAR = 'HG_TEST_GITHUB_SECRET_UNSET';

describe('cli: a command needs only the config it uses', () => {
  let hg: Hookgate;
  /** The service's environment has the secret; the clients' below does not. */
  before(async () => {
    hg = await startHookgate({
      config: {
        admin: { enabled: true, port: 0, token: ADMIN },
        hooks: { presets: [{ use: 'github', secret: { env: SECRET_VAR } }] },
      },
      env: { [SECRET_VAR]: 'the-service-has-it' },
    });
  });
  after(() => hg?.cleanup());
  const env = { [SECRET_VAR]: '' };

  it('send wake works without the GitHub secret in this shell', async () => {
    const r = await runCli(
      ['send', 'wake', 'no secrets here', '--mode', 'next-heartbeat', '--config', hg.configFile, '--url', hg.url],
      { cwd: hg.dir, env },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).ok, true);
  });

  it('status works without it', async () => {
    const r = await runCli(['status', '--json', '--config', hg.configFile], { cwd: hg.dir, env });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(JSON.parse(r.stdout).queues);
  });

  it('tail follows the running service without it', async () => {
    const admin = String(hg.logs.find((l) => l.msg === 'hookgate listening')!.adminUrl);
    const tail = spawn(process.execPath, [CLI, 'tail', '--json', '--config', hg.configFile, '--url', admin], {
      cwd: hg.dir,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: Array<Record<string, unknown>> = [];
    const errors: string[] = [];
    createInterface({ input: tail.stdout! }).on('line', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
    createInterface({ input: tail.stderr! }).on('line', (l) => errors.push(l));
    const exited = new Promise<number | null>((resolve) => tail.once('exit', resolve));
    try {
      await waitFor(
        'a wake seen by tail',
        async () => {
          if (tail.exitCode !== null) assert.fail(`tail exited ${tail.exitCode}: ${errors.join(' | ')}`);
          const r = await hg.post('/hooks/wake', { text: 'tail me', mode: 'next-heartbeat' });
          const id = String(r.body!.eventId);
          return waitFor(
            'the line',
            () => lines.some((l) => (l.eventIds as string[] | undefined)?.includes(id)) || undefined,
            1000,
          ).catch(() => undefined);
        },
        15_000,
      );
    } finally {
      tail.kill('SIGTERM');
      await exited;
    }
  });

  it('config check still fails, naming the key path and the variable', async () => {
    const r = await runCli(['config', 'check', '--config', hg.configFile], { cwd: hg.dir, env });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`hooks\\.presets\\[0\\]\\.secret: environment variable ${SECRET_VAR} is not set`),
    );
  });

  it('send still reports a problem in the keys it reads, by key path', async () => {
    const file = join(hg.dir, 'bad-port.json5');
    writeFileSync(file, `{ gateway: { port: "nope" }, hooks: { enabled: true, token: { env: "${SECRET_VAR}" } } }`);
    const r = await runCli(['send', 'wake', 'x', '--config', file], { cwd: hg.dir, env });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /gateway\.port: must be a port number/);
    assert.match(r.stderr, new RegExp(`hooks\\.token: environment variable ${SECRET_VAR} is not set`));
  });
});

describe("cli: the program's options before or after the subcommand", () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate();
  });
  after(() => hg?.cleanup());

  it('--config before the subcommand is the same as after it', async () => {
    const before = await runCli(['--config', hg.configFile, 'status', '--json'], { cwd: '/' });
    assert.equal(before.code, 0, before.stderr);
    const afterIt = await runCli(['status', '--json', '--config', hg.configFile], { cwd: '/' });
    assert.equal(afterIt.code, 0, afterIt.stderr);
    assert.deepEqual(Object.keys(JSON.parse(before.stdout)), Object.keys(JSON.parse(afterIt.stdout)));
    const send = await runCli(
      ['--verbose', '-c', hg.configFile, 'send', 'wake', 'before', '--mode', 'next-heartbeat', '--url', hg.url],
      { cwd: '/' },
    );
    assert.equal(send.code, 0, send.stderr);
    assert.match(send.stderr, /POST .*\/hooks\/wake → 200/);
  });

  it('a command that reads no config refuses it wherever it is', async () => {
    const r = await runCli(['--config', hg.configFile, 'token']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--config does not apply to `hookgate token`/);
  });

  it('--version needs no command module; help still lists every command', async () => {
    const v = await runCli(['--version']);
    assert.equal(v.code, 0);
    assert.match(v.stdout, /^\d+\.\d+\.\d+/);
    const help = await runCli(['--help']);
    for (const name of ['serve', 'send', 'status', 'tail', 'doctor', 'store', 'import'])
      assert.match(help.stdout, new RegExp(`\\n  ${name} `));
  });
});
