/**
 * `hookgate doctor`, the real binary in a temp directory. A good Telegram bot, a Slack token the
 * platform refuses, a model API that is down and a store directory others can read: exit 1, each problem named
 * with what to change, no secret in the output; --json parses; --offline calls nothing.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite.js';
import { freePort } from '../support/ngircd.js';
import {
  closedPortUrl,
  SLACK_TEST_TOKEN,
  startSlack,
  startTelegram,
  TELEGRAM_TEST_TOKEN,
  type StandIn,
} from '../support/platforms/index.js';
import { runCli, startHookgate } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

const REFUSED_SLACK_TOKEN = 'xoxb-9999-8888-refusedByTheStandIn';
const MODEL_KEY = 'sk-doctor-test-0123456789abcdef';

interface Line {
  status: string;
  what: string;
  detail: string;
  fix?: string;
}

describe('cli: hookgate doctor', () => {
  let telegram: StandIn<unknown>;
  let slack: StandIn<unknown>;
  let dir: string;
  let port: number;
  const doctor = (...args: string[]) => runCli(['doctor', ...args], { cwd: dir });

  before(async () => {
    telegram = await startTelegram();
    slack = await startSlack();
    dir = tempDir('hookgate-doctor-');
    port = await freePort();
    // A store made by an older install or by hand: its directory readable by everyone.
    mkdirSync(join(dir, 'data'), { mode: 0o755 });
    chmodSync(join(dir, 'data'), 0o755);
    const store = new SqliteStore({ path: join(dir, 'data/hookgate.db'), writer: 'inline' });
    await store.close();
    const config = {
      gateway: { port },
      storage: { driver: 'sqlite', path: './data/hookgate.db' },
      hooks: { enabled: true, token: TOKEN },
      models: {
        providers: { local: { api: 'openai-chat', baseUrl: `${await closedPortUrl()}/v1`, apiKey: MODEL_KEY } },
      },
      channels: {
        default: { channel: 'telegram', to: '1001' },
        telegram: { botToken: TELEGRAM_TEST_TOKEN, apiBaseUrl: telegram.url },
        slack: { botToken: REFUSED_SLACK_TOKEN, apiBaseUrl: slack.url },
      },
    };
    writeFileSync(join(dir, 'hookgate.json5'), JSON.stringify(config, null, 2));
  });
  after(async () => {
    await telegram.close();
    await slack.close();
  });

  it('exits 1 naming each problem and its fix, with no secret in the output', async () => {
    const r = await doctor();
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const out = r.stdout;
    const line = (what: string) =>
      out.split('\n').find((l) => new RegExp(`^\\S+\\s+${what.replace(/[.[\]]/g, '\\$&')}\\s`).test(l)) ?? '';
    assert.match(line('config'), /^ok\s+config\s+.*hookgate\.json5 \(from \.\/hookgate\.json5\): valid/);
    assert.match(line('store'), /^ok\s+store\s+.*hookgate\.db: opens and is writable/);
    assert.match(
      line('store permissions'),
      /^warn\s+store permissions\s+readable by group or others: .*data \(0755\).*→ chmod 700/,
    );
    assert.match(line('store integrity'), /^ok\s+store integrity\s+PRAGMA quick_check: ok/);
    assert.match(line('port'), new RegExp(`^ok\\s+port\\s+127\\.0\\.0\\.1:${port} is free`));
    assert.match(line('channels.telegram'), /^ok\s+channels\.telegram\s+bot @hookgate_test_bot/);
    assert.match(
      line('channels.slack'),
      /^fail\s+channels\.slack\s+slack error invalid_auth \(the bot token is wrong\) → check botToken/,
    );
    assert.match(
      line('models.providers.local'),
      /^fail\s+models\.providers\.local\s+cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\) → check baseUrl/,
    );
    assert.match(out, /2 failed, 1 warning/);
    for (const secret of [REFUSED_SLACK_TOKEN, SLACK_TEST_TOKEN, TELEGRAM_TEST_TOKEN, MODEL_KEY, TOKEN]) {
      assert.ok(!out.includes(secret) && !r.stderr.includes(secret), `secret ${secret.slice(0, 10)}… printed`);
    }
    assert.equal(slack.received.length + telegram.received.length, 0, 'a check sends no message');
  });

  it('--json prints the same findings as a JSON array', async () => {
    const r = await doctor('--json');
    assert.equal(r.code, 1);
    const list = JSON.parse(r.stdout) as Line[];
    assert.ok(Array.isArray(list));
    const slackLine = list.find((l) => l.what === 'channels.slack');
    assert.deepEqual(slackLine && { status: slackLine.status, detail: slackLine.detail }, {
      status: 'fail',
      detail: 'slack error invalid_auth (the bot token is wrong)',
    });
    assert.ok(
      list.every(
        (l) => ['ok', 'warn', 'fail'].includes(l.status) && typeof l.what === 'string' && typeof l.detail === 'string',
      ),
    );
  });

  it('--offline makes no network call and says so; the local checks still run', async () => {
    const before = telegram.requests.length + slack.requests.length;
    const r = await doctor('--offline');
    assert.equal(telegram.requests.length + slack.requests.length, before, 'no platform was called');
    assert.equal(r.code, 0, r.stdout);
    assert.match(r.stdout, /channels\.slack\s+not called \(--offline\)/);
    assert.match(r.stdout, /models\.providers\.local\s+not called \(--offline\)/);
    assert.match(r.stdout, /store permissions/);
  });

  it('an invalid config: every problem by key path, the store still checked', async () => {
    const bad = tempDir('hookgate-doctor-bad-');
    writeFileSync(
      join(bad, 'hookgate.json5'),
      JSON.stringify({ gateway: { port: 'x' }, channels: { slack: { botToken: 'nope' } } }),
    );
    const r = await runCli(['doctor'], { cwd: bad });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /fail\s+config\s+gateway\.port: /);
    assert.match(r.stdout, /fail\s+config\s+channels\.slack\.botToken: must be a Slack token/);
    assert.match(r.stdout, /ok\s+store\s+no store yet at .*hookgate\.db: `hookgate serve` creates it/);
  });

  it('the port: taken by something else fails; taken by a running hookgate is fine', async () => {
    const other: Server = createServer((_req, res) => res.end('not hookgate'));
    const otherPort = await freePort();
    await new Promise<void>((r) => other.listen(otherPort, '127.0.0.1', r));
    const otherDir = tempDir('hookgate-doctor-port-');
    writeFileSync(
      join(otherDir, 'hookgate.json5'),
      JSON.stringify({ gateway: { port: otherPort }, hooks: { enabled: true, token: TOKEN } }),
    );
    try {
      const r = await runCli(['doctor'], { cwd: otherDir });
      assert.equal(r.code, 1);
      assert.match(
        r.stdout,
        new RegExp(
          `fail\\s+port\\s+127\\.0\\.0\\.1:${otherPort} is in use: something else listens on it → stop it, or change gateway.port`,
        ),
      );
    } finally {
      await new Promise<void>((r) => other.close(() => r()));
    }

    const hgPort = await freePort();
    const hg = await startHookgate({ config: { gateway: { port: hgPort } } });
    try {
      const r = await runCli(['doctor', '--config', hg.configFile], { cwd: hg.dir });
      assert.match(
        r.stdout,
        new RegExp(`ok\\s+port\\s+127\\.0\\.0\\.1:${hgPort} is in use: hookgate is running there`),
      );
      assert.equal(r.code, 0, r.stdout);
    } finally {
      await hg.cleanup();
    }
  });
});
