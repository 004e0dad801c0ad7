/**
 * The CLI in scripts. `send` prints the body alone and exits by the status; --limit is validated;
 * --data reads a file or stdin; --sign signs as each mapping's scheme expects, accepted by the real server.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Hookgate, runCli, startHookgate } from '../support/server.js';

const SECRETS = { HG_GITHUB_SECRET: "It's a Secret to Everybody", HG_SLACK_SECRET: 'slack-signing-secret-0123' };
const signed = (path: string, signature: Record<string, unknown>) => ({
  match: { path },
  action: 'wake',
  wakeMode: 'next-heartbeat',
  textTemplate: `signed ${path}`,
  signature,
});

describe('cli: scripting against a running service', () => {
  let hg: Hookgate;
  const cli = (args: string[], opts: { env?: Record<string, string>; input?: string } = {}) =>
    runCli([...args, '--config', hg.configFile, ...(args[0] === 'send' ? ['--url', hg.url] : [])], {
      cwd: hg.dir,
      env: { ...SECRETS, ...opts.env },
      input: opts.input,
    });
  before(async () => {
    hg = await startHookgate({
      env: SECRETS,
      config: {
        hooks: {
          mappings: [
            signed('gh', { scheme: 'github', secret: '${HG_GITHUB_SECRET}' }),
            signed('stripe', { scheme: 'stripe', secret: 'whsec_stripe_endpoint_secret' }),
            signed('slack', { scheme: 'slack', secret: { env: 'HG_SLACK_SECRET' } }),
            signed('sw', {
              scheme: 'standard-webhooks',
              secret: `whsec_${Buffer.from('standard webhooks key 32 bytes!!').toString('base64')}`,
            }),
            signed('hmac', {
              scheme: 'hmac-sha256',
              secret: 'generic-secret',
              header: 'x-acme-signature',
              prefix: 'sha256=',
              encoding: 'base64',
            }),
            { match: { path: 'plain' }, action: 'wake', wakeMode: 'next-heartbeat', textTemplate: 'plain' },
          ],
        },
      },
    });
  });
  after(() => hg.cleanup());

  it('send prints the body alone (JSON, one line) and exits 0 on 2xx; --verbose puts the status on stderr', async () => {
    const ok = await cli(['send', 'wake', 'hello', '--mode', 'next-heartbeat', '--verbose']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout.split('\n').length, 2, 'one line');
    assert.equal((JSON.parse(ok.stdout) as { ok: boolean }).ok, true);
    assert.match(ok.stderr, /POST http:\/\/127\.0\.0\.1:\d+\/hooks\/wake → 200 OK/);
    const refused = await cli(['send', 'agent', 'x', '--channel', 'sms', '--verbose']);
    assert.equal(refused.code, 1);
    assert.equal((JSON.parse(refused.stdout) as { code: string }).code, 'invalid_channel');
    assert.match(refused.stderr, /→ 400 Bad Request/);
  });

  it('--limit must be a positive integer: abc, 0, -1 and 1.5 exit 1 with a clear message', async () => {
    for (const bad of ['abc', '0', '-1', '1.5']) {
      for (const cmd of [['runs', 'list'], ['sessions', 'list'], ['deliveries', 'list'], ['received']]) {
        const r = await cli([...cmd, '--limit', bad]);
        assert.equal(r.code, 1, `${cmd.join(' ')} --limit ${bad}`);
        assert.match(r.stderr, /--limit <n>' argument .* is invalid\. must be a positive integer/);
        assert.doesNotMatch(r.stderr, /sqlite/i);
      }
    }
    const one = await cli(['received', '--limit', '1', '--json']);
    assert.equal(one.code, 0, one.stderr);
    assert.ok((JSON.parse(one.stdout) as unknown[]).length <= 1);
  });

  it('send hook --data @file and --data - (stdin) send the bytes given', async () => {
    const file = join(hg.dir, 'payload.json');
    writeFileSync(file, '{"from":"file"}\n');
    const fromFile = await cli(['send', 'hook', 'plain', '--data', `@${file}`]);
    assert.equal(fromFile.code, 0, fromFile.stdout + fromFile.stderr);
    assert.equal((JSON.parse(fromFile.stdout) as { ok: boolean }).ok, true);
    const fromStdin = await cli(['send', 'hook', 'plain', '--data', '-'], { input: '{"from":"stdin"}' });
    assert.equal(fromStdin.code, 0, fromStdin.stdout + fromStdin.stderr);
    const missing = await cli(['send', 'hook', 'plain', '--data', '@nope.json']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /--data @nope\.json: cannot read .*nope\.json: ENOENT/);
    const notJson = await cli(['send', 'hook', 'plain', '--data', '-'], { input: 'not json' });
    assert.equal(notJson.code, 1);
    assert.match(notJson.stderr, /--data is not valid JSON/);
  });

  for (const path of ['gh', 'stripe', 'slack', 'sw', 'hmac']) {
    it(`send hook ${path} --sign is accepted by the mapping's signature; unsigned it is refused`, async () => {
      const body = JSON.stringify({ id: `evt_${path}_${Date.now()}`, event_id: `Ev${Date.now()}`, action: 'opened' });
      const r = await cli(['send', 'hook', path, '--data', body, '--sign']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal((JSON.parse(r.stdout) as { ok: boolean }).ok, true);
      const unsigned = await cli(['send', 'hook', path, '--data', body]);
      assert.equal(unsigned.code, 1);
      assert.equal((JSON.parse(unsigned.stdout) as { code: string }).code, 'unauthorized');
    });
  }

  it('send hook --form: a Slack slash command (form body) signed with --sign is accepted; --content-type sends --data as that type', async () => {
    const r = await cli([
      'send',
      'hook',
      'slack',
      '--form',
      'user_name=Steve',
      '--form',
      'text=94070',
      '--form',
      `trigger_id=t${Date.now()}`,
      '--sign',
    ]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout, '', 'a Slack form request is answered with an empty 200, as Slack expects');
    const typed = await cli([
      'send',
      'hook',
      'slack',
      '--data',
      `user_name=Ada&text=1&trigger_id=u${Date.now()}`,
      '--content-type',
      'application/x-www-form-urlencoded',
      '--sign',
    ]);
    assert.equal(typed.code, 0, typed.stdout + typed.stderr);
    // Unsigned, the same form is refused by the signature, as a JSON body is.
    const unsigned = await cli(['send', 'hook', 'slack', '--form', 'text=x']);
    assert.equal((JSON.parse(unsigned.stdout) as { code: string }).code, 'unauthorized');
  });

  it('--sign on a mapping without a signature, or with no mapping, is refused before sending', async () => {
    const plain = await cli(['send', 'hook', 'plain', '--data', '{}', '--sign']);
    assert.equal(plain.code, 1);
    assert.match(plain.stderr, /hooks\.mappings\[5\] .* has no signature/);
    const none = await cli(['send', 'hook', 'nothing-here', '--data', '{}', '--sign']);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no mapping or preset matches "nothing-here"/);
  });

  it('--json prints every list and record as JSON', async () => {
    const sent = await cli(['send', 'agent', 'json please', '--no-deliver']);
    const runId = (JSON.parse(sent.stdout) as { runId: string }).runId;
    for (const args of [
      ['runs', 'list'],
      ['runs', 'show', runId],
      ['sessions', 'list'],
      ['deliveries', 'list'],
      ['received'],
      ['config', 'check'],
    ]) {
      const r = await cli([...args, '--json']);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.doesNotThrow(() => JSON.parse(r.stdout), `${args.join(' ')} --json prints JSON`);
    }
  });
});
