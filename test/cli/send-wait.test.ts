/**
 * `hookgate send agent --wait` with the real binary: the run's progress on stderr (a line per change when stderr is
 * not a terminal), its completion on stdout, and an exit code that says how it ended: 0 for a reply delivered or held
 * back on purpose, 2 for a run that failed (a model answering 503 until the retries give up), 4 when the wait ended
 * first. Also the line a run's record makes (unit).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { progressLine, WAIT_EXIT, waitExitCode } from '../../src/cli/send-wait.js';
import { startOpenAIStandin, type OpenAIStandin } from '../support/openai-standin.js';
import { type Hookgate, runCli, startHookgate } from '../support/server.js';

const ADMIN = 'admin-token-for-send-wait-0123456789';

describe('send agent --wait: the line of a run record, the exit code of a completion', () => {
  it('says queued, running, retrying with the reason and the seconds to the next try, done', () => {
    assert.equal(progressLine({ state: 'queued' }, 0), 'queued');
    assert.equal(progressLine({ state: 'running', retries: 0 }, 0), 'running');
    assert.equal(progressLine({ state: 'running', retries: 2 }, 0), 'running (try 3)');
    const retrying = { state: 'queued', error: 'provider_http: HTTP 503', nextAttemptAt: 4_200 };
    assert.equal(progressLine(retrying, 1_000), 'retrying: provider_http: HTTP 503; next try in 4 s');
    assert.equal(progressLine({ state: 'succeeded', deliveryStatus: 'outbox' }, 0), 'done: succeeded (reply: outbox)');
    assert.equal(
      progressLine({ state: 'failed', error: 'boom\u001b[2J\nnext line' }, 0),
      'done: failed: boom [2J next line',
    );
  });

  it('exit 0 only for a reply handed to the outbox or held back on purpose', () => {
    assert.equal(waitExitCode({ status: 'ok', deliveryStatus: 'outbox' }), WAIT_EXIT.ok);
    assert.equal(waitExitCode({ status: 'ok', deliveryStatus: 'suppressed:deliver_false' }), WAIT_EXIT.ok);
    assert.equal(waitExitCode({ status: 'ok', deliveryStatus: 'nowhere:no_route' }), WAIT_EXIT.undelivered);
    assert.equal(waitExitCode({ status: 'error', deliveryStatus: 'nowhere:failed' }), WAIT_EXIT.runError);
    assert.equal(waitExitCode({ status: 'pending' }), WAIT_EXIT.pending);
    assert.equal(waitExitCode(undefined), WAIT_EXIT.pending);
  });
});

describe('send agent --wait against a running service (real binary)', { timeout: 120_000 }, () => {
  let hg: Hookgate;
  let down: Server;
  let slow: OpenAIStandin;
  let admin: string;
  const cli = (args: string[]) =>
    runCli([...args, '--config', hg.configFile, '--url', hg.url, '--admin-url', admin], { cwd: hg.dir });

  before(async () => {
    // The model is "down": every request answered 503, as a proxy in front of a stopped model server does.
    down = createServer((_req, res) =>
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"unavailable"}'),
    );
    await new Promise<void>((r) => down.listen(0, '127.0.0.1', r));
    slow = await startOpenAIStandin();
    slow.setMode('hang');
    const downUrl = `http://127.0.0.1:${(down.address() as AddressInfo).port}/v1`;
    hg = await startHookgate({
      config: {
        heartbeat: { every: 'off' },
        admin: { enabled: true, port: 0, token: ADMIN },
        hooks: { maxWaitSeconds: 6 },
        models: {
          providers: {
            down: { api: 'openai-chat', baseUrl: downUrl, apiKey: 'test-key', maxAttempts: 1 },
            slow: { api: 'openai-chat', baseUrl: slow.url, apiKey: 'test-key', maxAttempts: 1 },
          },
        },
        // One retry, 3 s after the first failure (the window's end): the progress polls (every second) see it wait.
        agents: {
          defaults: { model: 'echo/echo', retry: { maxSeconds: 3, initialBackoffMs: 5000, maxBackoffMs: 5000 } },
        },
        channels: { default: { channel: 'log' }, log: {} },
      },
    });
    admin = String(hg.logs.find((l) => l.msg === 'hookgate listening')!.adminUrl);
  });
  after(async () => {
    await hg?.cleanup();
    await slow?.close();
    await new Promise((r) => down?.close(r));
  });

  it('a model answering 503: progress lines (queued, running, retrying: reason, next try), then failed, exit 2', async () => {
    const r = await cli(['send', 'agent', 'hello down there', '--model', 'down/m', '--wait']);
    assert.equal(r.code, WAIT_EXIT.runError, `${r.stdout}\n${r.stderr}`);
    const answer = JSON.parse(r.stdout) as {
      ok: boolean;
      runId: string;
      duplicate?: boolean;
      completion: { status: string; error: string };
    };
    assert.equal(answer.ok, true);
    assert.equal(answer.duplicate, undefined, 'the held answer is the first one, not a replay');
    assert.equal(answer.completion.status, 'error');
    assert.match(answer.completion.error, /HTTP 503.*gave up after/);
    const lines = r.stderr
      .split('\n')
      .filter((l) => l.startsWith(`run ${answer.runId}: `))
      .map((l) => l.slice(`run ${answer.runId}: `.length));
    // queued and running last milliseconds here and may fall between two polls; the wait for the next try does not.
    assert.match(lines.join('\n'), /^retrying: provider_http: .*503.*; next try in \d+ s$/m, r.stderr);
    assert.match(lines.at(-1) ?? '', /^done: failed: provider_http: .*503.*gave up after/, r.stderr);
    assert.equal(new Set(lines).size, lines.length, 'not a terminal: one line per change, never the same line again');
    assert.doesNotMatch(r.stderr, /\r/, 'no in-place rewriting when stderr is not a terminal');
  });

  it('a reply delivered: done, exit 0, the completion on stdout', async () => {
    const r = await cli(['send', 'agent', 'hello echo', '--wait', '--channel', 'log']);
    assert.equal(r.code, WAIT_EXIT.ok, `${r.stdout}\n${r.stderr}`);
    const answer = JSON.parse(r.stdout) as { runId: string; completion: { status: string; deliveryStatus: string } };
    assert.deepEqual([answer.completion.status, answer.completion.deliveryStatus], ['ok', 'outbox']);
    assert.match(r.stderr, new RegExp(`^run ${answer.runId}: done: succeeded \\(reply: outbox\\)$`, 'm'));
  });

  it('the wait ends before the run (hooks.maxWaitSeconds): pending, exit 4, and how to follow it', async () => {
    const r = await cli(['send', 'agent', 'take your time', '--model', 'slow/m', '--timeout', '60', '--wait']);
    assert.equal(r.code, WAIT_EXIT.pending, `${r.stdout}\n${r.stderr}`);
    const answer = JSON.parse(r.stdout) as { runId: string; completion: { status: string } };
    assert.equal(answer.completion.status, 'pending');
    assert.match(r.stderr, new RegExp(`^run ${answer.runId}: running$`, 'm'));
    assert.match(
      r.stderr,
      new RegExp(`has not ended yet \\(it goes on\\): follow it with \`hookgate runs show ${answer.runId}\``),
    );
  });

  it('a refused request is exit 1 with the answer on stdout, as without --wait', async () => {
    const r = await cli(['send', 'agent', 'x', '--channel', 'sms', '--wait']);
    assert.equal(r.code, 1);
    assert.equal((JSON.parse(r.stdout) as { code: string }).code, 'invalid_channel');
  });
});
