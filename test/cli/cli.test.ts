/**
 * The CLI as a user runs it: the built binary, a real config file, a real running service.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ChildProcess, spawn } from 'node:child_process';
import { CLI, type Hookgate, runCli, startHookgate } from '../support/server.js';
import { removeDir, tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

describe('cli: offline commands', () => {
  let dir: string;
  before(() => {
    dir = tempDir('hookgate-cli-');
  });

  it('token prints 32 random bytes as base64url, new each time', async () => {
    const a = await runCli(['token']);
    const b = await runCli(['token']);
    assert.equal(a.code, 0);
    assert.match(a.stdout.trim(), /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(a.stdout.trim(), 'base64url').length, 32);
    assert.notEqual(a.stdout, b.stdout);
  });

  it('init writes a commented config (mode 0600) with a fresh token that config check accepts', async () => {
    const r = await runCli(['init', 'hg.json5'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const file = join(dir, 'hg.json5');
    const text = readFileSync(file, 'utf8');
    assert.match(text, /^\/\/ hookgate config/);
    assert.match(text, /token: "[A-Za-z0-9_-]{43}"/);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const check = await runCli(['config', 'check', '--config', 'hg.json5'], { cwd: dir });
    assert.equal(check.code, 0, check.stderr);
    assert.match(check.stdout, /hg\.json5: ok/);
    const again = await runCli(['init', 'hg.json5'], { cwd: dir });
    assert.equal(again.code, 1, 'does not overwrite without --force');
    assert.match(again.stderr, /exists/);
  });

  it('config check exits 1 listing every problem by key path', async () => {
    const file = join(dir, 'bad.json5');
    writeFileSync(file, '{ hooks: { enabled: true, path: "/", bogus: 1 }, gateway: { port: 99999 } }');
    const r = await runCli(['config', 'check', '--config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /hooks: unknown key: bogus/);
    assert.match(r.stderr, /gateway\.port:/);
  });

  it('config check reports cross-key rules by key path', async () => {
    const file = join(dir, 'rules.json5');
    writeFileSync(file, '{ hooks: { enabled: true, path: "/", allowedSessionKeyPrefixes: ["x:"] } }');
    const r = await runCli(['config', 'check', '--config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /hooks\.token: hooks\.enabled requires hooks\.token/);
    assert.match(r.stderr, /hooks\.path: hooks\.path may not be '\/'/);
    assert.match(r.stderr, /hooks\.allowedSessionKeyPrefixes: .*must include 'hook:'/);
  });

  it('config check finds the config through HOOKGATE_CONFIG and prints warnings', async () => {
    const file = join(dir, 'warn.json5');
    writeFileSync(
      file,
      '{ hooks: { enabled: true, token: "same-token-0123456789" }, admin: { token: "same-token-0123456789" } }',
    );
    const r = await runCli(['config', 'check'], { cwd: dir, env: { HOOKGATE_CONFIG: file } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /warning: hooks\.token equals admin\.token/);
  });

  it('an unknown command or option is a usage error, exit 1', async () => {
    assert.equal((await runCli(['frobnicate'])).code, 1);
    assert.equal((await runCli(['runs', 'list', '--nope'])).code, 1);
  });
});

describe('cli: against a running service', () => {
  let hg: Hookgate;
  const cli = (args: string[]) =>
    runCli([...args, '--config', hg.configFile, ...(args[0] === 'send' ? ['--url', hg.url] : [])], { cwd: hg.dir });
  before(async () => {
    // Refusals are stored as counts once their window ends: a short window, so `received` shows them soon.
    hg = await startHookgate({ config: { hooks: { refusals: { windowSeconds: 1 } } } });
  });
  after(() => hg.cleanup());

  it('send wake posts a wake and sessions show main lists it as pending', async () => {
    const r = await cli(['send', 'wake', 'Door bell rang', '--mode', 'next-heartbeat']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\{"ok":true,"mode":"next-heartbeat","eventId":"[0-9a-f-]+","eventOutcome":"queued"\}\n$/);
    const show = await cli(['sessions', 'show', 'main']);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /pending system events \(1\)/);
    assert.match(show.stdout, /\[wake\] Door bell rang/);
    const list = await cli(['sessions', 'list']);
    assert.match(list.stdout, /^KEY\s+AGENTID\s+PENDINGEVENTS/m);
    assert.match(list.stdout, /^main\s+main\s+1\s/m);
  });

  it('send agent posts a run; runs list and runs show find it', async () => {
    const r = await cli([
      'send',
      'agent',
      'Summarise build 1432',
      '--name',
      'CI',
      '--no-deliver',
      '--thinking',
      'low',
      '--timeout',
      '30',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const runId = /"runId":"([0-9a-f-]+)"/.exec(r.stdout)?.[1];
    assert.ok(runId, r.stdout);
    const run = await waitFor('the run to succeed', async () => {
      const list = await cli(['runs', 'list', '--json']);
      const found = (JSON.parse(list.stdout) as Array<Record<string, unknown>>).find((x) => x.id === runId);
      return found?.state === 'succeeded' ? found : undefined;
    });
    assert.equal(run?.state, 'succeeded');
    assert.equal(run?.deliver, false);
    assert.equal(run?.thinking, 'low');
    const show = await cli(['runs', 'show', runId]);
    assert.equal(show.code, 0);
    assert.match(show.stdout, new RegExp(`run ${runId}`));
    assert.match(show.stdout, /state:\s+succeeded \(attempts 1\)/);
    assert.match(show.stdout, /reply:\s+echo: Summarise build 1432/);
    assert.match(show.stdout, /hook:\s+CI via agent/);
    assert.match(show.stdout, /delivery:\s+off/);
    const missing = await cli(['runs', 'show', 'no-such-run']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no run no-such-run/);
  });

  it('send prints the error answer and exits 1 when the service refuses', async () => {
    const r = await cli(['send', 'agent', 'x', '--channel', 'sms']);
    assert.equal(r.code, 1);
    assert.equal((JSON.parse(r.stdout) as { code: string }).code, 'invalid_channel');
  });

  it('send hook posts JSON to a mapped path (404 while no mapping matches)', async () => {
    const bad = await cli(['send', 'hook', 'github', '--data', '{not json']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--data is not valid JSON/);
    const r = await cli(['send', 'hook', 'github', '--data', '{"action":"opened"}']);
    assert.equal(r.code, 1);
    assert.equal((JSON.parse(r.stdout) as { code: string }).code, 'not_found');
  });

  it('send with an idempotency key is answered as a duplicate the second time', async () => {
    const a = await cli(['send', 'agent', 'once', '--idempotency-key', 'cli-1']);
    const b = await cli(['send', 'agent', 'once', '--idempotency-key', 'cli-1']);
    assert.equal(a.code, 0);
    assert.match(b.stdout, /"duplicate":true/);
  });

  it('runs retry re-queues a finished run under the same id, and refuses an unknown one', async () => {
    const r = await cli(['send', 'agent', 'run me twice', '--no-deliver']);
    const runId = /"runId":"([0-9a-f-]+)"/.exec(r.stdout)![1]!;
    const stateOf = async () =>
      JSON.parse((await cli(['runs', 'show', runId, '--json'])).stdout) as { state: string; attempts: number };
    await waitFor('the run to succeed', async () => (await stateOf()).state === 'succeeded');
    const retry = await cli(['runs', 'retry', runId]);
    assert.equal(retry.code, 0, retry.stderr);
    assert.match(retry.stdout, /queued again/);
    const after = await waitFor('the second attempt to succeed', async () => {
      const s = await stateOf();
      return s.state === 'succeeded' && s.attempts === 2 ? s : undefined;
    });
    assert.deepEqual(after, { ...after, state: 'succeeded', attempts: 2 });
    const unknown = await cli(['runs', 'retry', 'no-such-run']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no finished run no-such-run/);
  });

  it('received lists what came in, newest first; --rejected keeps the refusals with their codes', async () => {
    const ok = await cli(['send', 'wake', 'received check', '--mode', 'next-heartbeat']);
    assert.equal(ok.code, 0, ok.stderr);
    const eventId = /"eventId":"([0-9a-f-]+)"/.exec(ok.stdout)![1]!;
    const refused = await fetch(`${hg.url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: 'Bearer wrong-token' },
      body: '{}',
    });
    assert.equal(refused.status, 401);
    // A refusal is counted, and stored when its window (1 s here) ends: read again until it is there.
    let all = await cli(['received', '--json']);
    for (let i = 0; i < 40 && all.code === 0 && !all.stdout.includes('"status": 401'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      all = await cli(['received', '--json']);
    }
    assert.equal(all.code, 0, all.stderr);
    const recs = JSON.parse(all.stdout) as Array<{
      status: number;
      code: string | null;
      path: string;
      clientIp: string;
      eventIds: string[];
      count?: number;
    }>;
    const refusal = recs.find((r) => r.status === 401);
    assert.deepEqual(refusal && { ...pickFirst([refusal]), clientIp: refusal.clientIp, count: refusal.count }, {
      status: 401,
      code: 'unauthorized',
      path: 'wake',
      clientIp: '127.0.0.1',
      count: 1,
    });
    assert.ok(
      recs.some((r) => r.status === 200 && r.eventIds.includes(eventId)),
      'the accepted wake, with its event id',
    );
    const rejected = await cli(['received', '--rejected']);
    assert.equal(rejected.code, 0, rejected.stderr);
    assert.match(rejected.stdout, /^AT\s+WINDOW\s+COUNT\s+PATH\s+CLIENTIP\s+STATUS\s+CODE/m);
    assert.match(rejected.stdout, /\s1 s\s+1\s+wake\s+127\.0\.0\.1\s+401\s+unauthorized\s/);
    assert.doesNotMatch(rejected.stdout, /\s200\s/, 'no accepted request among the refusals');
    assert.doesNotMatch(rejected.stdout + all.stdout, /wrong-token/, 'never the presented token');
  });

  it('send reports an unreachable service clearly', async () => {
    const file = join(hg.dir, 'elsewhere.json5');
    writeFileSync(
      file,
      JSON.stringify({
        gateway: { port: 9 },
        hooks: { enabled: true, token: 'x'.repeat(20) },
        storage: { path: './data/other.db' },
      }),
    );
    const r = await runCli(['send', 'wake', 'x', '--config', file]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot reach hookgate at http:\/\/127\.0\.0\.1:9\/hooks/);
  });
});

describe('cli: npm start with no config (embedded default)', () => {
  it('serves on 127.0.0.1:18789 with a token generated once into ./data/hook-token (0600)', async (t) => {
    const busy = await fetch('http://127.0.0.1:18789/').then(
      () => true,
      () => false,
    );
    if (busy) return t.skip('port 18789 is taken on this machine; the embedded default always uses it');
    const adminBusy = await fetch('http://127.0.0.1:18790/').then(
      () => true,
      () => false,
    );
    if (adminBusy)
      return t.skip('port 18790 is taken on this machine; the embedded default always uses it for the admin listener');
    const dir = tempDir('hookgate-default-');
    const procs: ChildProcess[] = [];
    // stdout and stderr are two pipes: the listening line (stdout) can arrive before the notices written to stderr
    // just ahead of it, so `stderr()` reads what has come so far and the notices are waited for.
    const start = () =>
      new Promise<{ proc: ChildProcess; stderr: () => string }>((resolve, reject) => {
        const proc = spawn(process.execPath, [CLI, 'serve'], {
          cwd: dir,
          env: { ...process.env, HOOKGATE_TOKEN: '', HOOKGATE_CONFIG: '' },
        });
        procs.push(proc);
        let stderr = '';
        proc.stderr.on('data', (d) => (stderr += d));
        proc.stdout.on('data', (d) => {
          if (String(d).includes('hookgate listening')) resolve({ proc, stderr: () => stderr });
        });
        proc.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
      });
    const stop = (proc: ChildProcess) => new Promise((r) => (proc.once('exit', r), proc.kill('SIGTERM')));
    try {
      const first = await start();
      const tokenFile = join(dir, 'data/hook-token');
      const token = readFileSync(tokenFile, 'utf8').trim();
      assert.match(token, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(statSync(tokenFile).mode & 0o777, 0o600);
      await waitFor('the dashboard notice', () => first.stderr().includes('http://127.0.0.1:18790/'));
      assert.ok(first.stderr().includes(token), 'the generated token is printed at first start');
      const r = await fetch('http://127.0.0.1:18789/hooks/wake', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: '{"text":"hi"}',
      });
      assert.equal(r.status, 200);
      // The admin listener: on, its token generated once into ./data/admin-token (0600), its URL printed.
      const adminToken = readFileSync(join(dir, 'data/admin-token'), 'utf8').trim();
      assert.equal(statSync(join(dir, 'data/admin-token')).mode & 0o777, 0o600);
      assert.ok(!first.stderr().includes(adminToken), 'the admin token is not printed');
      const runs = await fetch('http://127.0.0.1:18790/api/v1/runs', {
        headers: { authorization: `Bearer ${adminToken}` },
      });
      assert.equal(runs.status, 200);
      await stop(first.proc);

      const second = await start();
      await waitFor('the dashboard notice', () => second.stderr().includes('http://127.0.0.1:18790/'));
      assert.ok(!second.stderr().includes(token), 'not printed again');
      assert.equal(readFileSync(tokenFile, 'utf8').trim(), token, 'the same token is kept');
      await stop(second.proc);
      assert.ok(statSync(join(dir, 'data/hookgate.db')).size > 0);
    } finally {
      // A failed assertion must not leave a server holding the embedded default's ports for the other tests.
      for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
      removeDir(dir);
    }
  });
});

function pickFirst(
  recs: Array<{ status: number; code: string | null; path: string }>,
): { status: number; code: string | null; path: string } | undefined {
  const r = recs[0];
  return r && { status: r.status, code: r.code, path: r.path };
}
