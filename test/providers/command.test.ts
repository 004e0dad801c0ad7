import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { commandProviderSchema } from '../../src/config/schema/models.js';
import { createCommandProvider, renderPrompt, type CommandOptions } from '../../src/providers/command.js';
import { fromRoot } from '../support/paths.js';
import { rejection, requestFor } from '../support/provider-tests.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const AGENT = fromRoot('test/support/agent.mjs');
const dir = tempDir('hookgate-command-');
let seq = 0;
const tmp = (name: string) => join(dir, `${++seq}-${name}`);

function agent(args: string[], extra: Record<string, unknown> = {}, options: CommandOptions = {}) {
  const config = commandProviderSchema.parse({
    api: 'command',
    command: process.execPath,
    args: [AGENT, ...args],
    ...extra,
  });
  return createCommandProvider('cli', config, {
    killGraceMs: 300,
    retry: { baseDelayMs: 1, maxDelayMs: 2 },
    ...options,
  });
}

const request = requestFor('sonnet');

/** Alive and not a zombie (a reparented grandchild may wait for a reaper that a container lacks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true; // no /proc (macOS): kill(0) said alive
  }
}

const readPids = (file: string) =>
  waitFor('the pid file', () => {
    if (!existsSync(file)) return undefined;
    const pids = readFileSync(file, 'utf8').trim().split('\n').map(Number);
    return pids.length === 2 && pids.every((p) => p > 0) ? pids : undefined;
  });

describe('command provider', () => {
  it('sends a lone message as is on stdin and returns stdout trimmed', async () => {
    const reply = await agent(['--mode', 'reply']).complete(request());
    assert.equal(reply.text, 'agent: hello there');
  });

  it('renders system prompt and earlier turns as a Markdown transcript, the new message last', async () => {
    const messages = [
      { role: 'user' as const, content: 'first' },
      { role: 'assistant' as const, content: 'reply one' },
      { role: 'user' as const, content: 'second\nline two' },
    ];
    const expected =
      '### System\nbe brief\n\n### User\nfirst\n\n### Assistant\nreply one\n\n### User\nsecond\nline two\n';
    assert.equal(renderPrompt({ system: 'be brief', messages }), expected);
    const reply = await agent(['--mode', 'reply']).complete(request({ system: 'be brief', messages }));
    assert.equal(reply.text, `agent: ${expected.trim()}`);
  });

  it('passes model and thinking as env, adds the configured env and cwd, and hides HOOKGATE_* of the service', async () => {
    process.env['HOOKGATE_TOKEN'] = 'ingress-token-must-not-leak';
    try {
      const cwd = mkdtempSync(join(dir, 'cwd-'));
      const p = agent(['--mode', 'env'], { env: { AGENT_SECRET: 's3cret-value' }, cwd });
      const a = JSON.parse((await p.complete(request({ thinking: 'high' }))).text) as Record<string, unknown>;
      assert.deepEqual(a, { model: 'sonnet', thinking: 'high', token: null, secret: 's3cret-value', cwd });
      const b = JSON.parse((await p.complete(request())).text) as Record<string, unknown>;
      assert.equal(b['thinking'], 'off');
    } finally {
      delete process.env['HOOKGATE_TOKEN'];
    }
  });

  it('a non-zero exit is provider_command_failed with the code and a bounded, redacted stderr tail', async () => {
    const p = agent(['--mode', 'fail', '--code', '3'], { env: { AGENT_SECRET: 'hunter2-abcdef-123456' } });
    const err = await rejection(p.complete(request()));
    assert.equal(err.code, 'provider_command_failed');
    assert.equal(err.retryable, false);
    assert.match(
      err.message,
      /exited with code 3: stderr line 17 \| stderr line 18 \| stderr line 19 \| stderr line 20 \| fatal: upstream rejected key \[redacted\]$/,
    );
    assert.doesNotMatch(err.message, /stderr line 16\b/);
    assert.doesNotMatch(err.message, /abcdef-123456/);
  });

  it('is not retried on failure (side effects), but exit 75 (EX_TEMPFAIL) is', async () => {
    const count = tmp('count');
    const reply = await agent(['--mode', 'tempfail', '--count-file', count, '--fail-times', '2'], {
      maxAttempts: 3,
    }).complete(request());
    assert.equal(reply.text, 'recovered');
    assert.equal(readFileSync(count, 'utf8'), '3');

    const again = tmp('count');
    const err = await rejection(
      agent(['--mode', 'tempfail', '--count-file', again, '--fail-times', '5'], { maxAttempts: 2 }).complete(request()),
    );
    assert.equal(err.code, 'provider_command_failed');
    assert.equal(err.retryable, true);
    assert.match(err.message, /exited with code 75: busy, try later/);
    assert.equal(readFileSync(again, 'utf8'), '2');
  });

  it('a missing command is provider_command_failed (spawn failure)', async () => {
    const config = commandProviderSchema.parse({ api: 'command', command: join(dir, 'no-such-agent') });
    const err = await rejection(createCommandProvider('cli', config).complete(request()));
    assert.equal(err.code, 'provider_command_failed');
    assert.match(err.message, /cannot start .*ENOENT/);
  });

  it('the run signal kills the agent and its children (process group), provider_timeout', async () => {
    const pidFile = tmp('pids');
    const ctrl = new AbortController();
    const pending = agent(['--mode', 'sleep', '--pid-file', pidFile]).complete(request({ signal: ctrl.signal }));
    const [pid, grandchild] = await readPids(pidFile);
    assert.ok(alive(pid!) && alive(grandchild!), 'both started');
    ctrl.abort();
    const err = await rejection(pending);
    assert.equal(err.code, 'provider_timeout');
    assert.equal(err.retryable, false);
    assert.equal(alive(pid!), false, 'the agent is gone');
    await waitFor('the grandchild to die', () => (alive(grandchild!) ? undefined : true), 2000);
  });

  it('requestTimeoutMs kills the agent; one ignoring SIGTERM gets SIGKILL after the grace period', async () => {
    const pidFile = tmp('pids');
    // Long enough for the agent (a node process) to start and write its pids on a loaded machine: at 400 ms, a busy
    // CI machine timed the request out before the agent had started.
    const timeoutMs = 2000;
    const p = agent(['--mode', 'stubborn', '--pid-file', pidFile], { requestTimeoutMs: timeoutMs, maxAttempts: 3 });
    const t0 = Date.now();
    const settled = rejection(p.complete(request()));
    const [pid, grandchild] = await readPids(pidFile);
    const err = await settled;
    const took = Date.now() - t0;
    assert.equal(err.code, 'provider_timeout');
    assert.equal(err.retryable, false, 'a timed-out agent is not run again');
    assert.match(err.message, /requestTimeoutMs/);
    assert.ok(took >= timeoutMs + 300 - 50, `settled after ${took} ms, before the SIGKILL`);
    assert.equal(alive(pid!), false);
    await waitFor('the grandchild to die', () => (alive(grandchild!) ? undefined : true), 2000);
  });

  it('more than maxOutputBytes on stdout is an error and the agent is stopped', async () => {
    const err = await rejection(
      agent(['--mode', 'big', '--bytes', '300000'], {}, { maxOutputBytes: 100_000 }).complete(request()),
    );
    assert.equal(err.code, 'provider_bad_response');
    assert.match(err.message, /more than 100000 bytes/);
    const ok = await agent(['--mode', 'big', '--bytes', '100000'], {}, { maxOutputBytes: 100_000 }).complete(request());
    assert.equal(ok.text.length, 100_000);
  });

  it('the default bound is 1 MiB', async () => {
    const err = await rejection(agent(['--mode', 'big', '--bytes', String(1024 * 1024 + 1)]).complete(request()));
    assert.equal(err.code, 'provider_bad_response');
  });

  it('an agent that exits without reading a large prompt still succeeds (no EPIPE crash)', async () => {
    const reply = await agent(['--mode', 'no-read']).complete(
      request({ messages: [{ role: 'user', content: 'y'.repeat(4 * 1024 * 1024) }] }),
    );
    assert.equal(reply.text, 'ok');
  });

  it('close() stops running agents', async () => {
    const pidFile = tmp('pids');
    const p = agent(['--mode', 'sleep', '--pid-file', pidFile]);
    const pending = p.complete(request());
    const [pid] = await readPids(pidFile);
    await p.close?.();
    const err = await rejection(pending);
    assert.equal(err.code, 'provider_timeout');
    assert.equal(alive(pid!), false);
  });
});
