/**
 * Named channel accounts (`accountId`, docs/reference.md#agent) against the real server process and a Telegram stand-in
 * serving two bots: the default one (`channels.telegram`) and `alerts` (`channels.telegram.accounts.alerts`, its token
 * from the environment). A run names the account; the message arrives under that bot's token. Run `npm run build` first
 * when running this file alone.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import type { Delivery } from '../../src/store/types.js';
import { type StandIn, startTelegram, type TelegramMessage } from '../support/platforms/index.js';
import { openServerStore, postAgent, waitFor, waitForRun } from '../support/runtime-kit.js';
import { type Hookgate, runCli, startHookgate } from '../support/server.js';

const DEFAULT_BOT = '111111111:default-bot-secret';
const ALERTS_BOT = '222222222:alerts-bot-secret';
const CHAT = '1001';

describe('channel accounts', { timeout: 60_000 }, () => {
  let telegram: StandIn<TelegramMessage>;
  let hg: Hookgate;
  let store: SqliteStore;

  before(async () => {
    // A rate-limit answer asks for 4 s: long enough to reload the config while a delivery waits for its retry.
    telegram = await startTelegram({ token: DEFAULT_BOT, extraTokens: [ALERTS_BOT], retryAfterS: 4 });
    hg = await startHookgate({
      config: {
        heartbeat: { every: 'off' },
        agents: { defaults: { model: 'echo/echo' } },
        channels: {
          telegram: {
            botToken: DEFAULT_BOT,
            apiBaseUrl: telegram.url,
            accounts: { alerts: { botToken: { env: 'ALERTS_BOT' } } },
          },
        },
      },
      env: { ALERTS_BOT },
    });
    store = openServerStore(hg);
  });
  after(async () => {
    for (const c of [() => store?.close(), () => hg?.cleanup(), () => telegram?.close()]) {
      try {
        await c();
      } catch {
        /* keep cleaning up */
      }
    }
  });

  async function deliveryOf(runId: string): Promise<Delivery> {
    const run = await waitForRun(store, runId);
    assert.equal(run.state, 'succeeded', run.error ?? '');
    return waitFor(`delivery of run ${runId} to finish`, async () => {
      const [d] = await store.listDeliveries({ runId });
      return d && d.state !== 'pending' ? d : undefined;
    });
  }

  /** The bot token in the path of the stand-in request that carried `text`. */
  function botTokenOf(text: string): string | undefined {
    const req = telegram.requests.find((r) => JSON.stringify(r.body).includes(text));
    return req && /^\/bot([^/]+)\/sendMessage$/.exec(req.path)?.[1];
  }

  it('a run with accountId "alerts" arrives under the alerts bot; one without under the default bot', async () => {
    const viaDefault = await postAgent(hg, {
      message: 'plain run',
      channel: 'telegram',
      to: CHAT,
      wakeMode: 'next-heartbeat',
    });
    const d1 = await deliveryOf(viaDefault);
    assert.equal(d1.state, 'delivered', d1.lastError ?? '');
    assert.equal(d1.accountId, null);
    assert.equal(botTokenOf('plain run'), DEFAULT_BOT);

    const viaAlerts = await postAgent(hg, {
      message: 'alerts run',
      channel: 'telegram',
      to: CHAT,
      accountId: 'alerts',
      wakeMode: 'next-heartbeat',
    });
    assert.equal((await store.getRun(viaAlerts))?.accountId, 'alerts');
    const d2 = await deliveryOf(viaAlerts);
    assert.equal(d2.state, 'delivered', d2.lastError ?? '');
    assert.equal(d2.accountId, 'alerts');
    assert.equal(botTokenOf('alerts run'), ALERTS_BOT);
  });

  it('a reply to "last" goes out through the account of the route the operator set', async () => {
    assert.equal(
      await store.getRoute('main'),
      undefined,
      'an explicit delivery through alerts set the main session route',
    );
    const set = await runCli(
      [
        'sessions',
        'route',
        'main',
        '--channel',
        'telegram',
        '--to',
        CHAT,
        '--account',
        'alerts',
        '--config',
        hg.configFile,
      ],
      { cwd: hg.dir, env: { ALERTS_BOT } },
    );
    assert.equal(set.code, 0, set.stderr);
    const runId = await postAgent(hg, { message: 'follow-up to last', wakeMode: 'next-heartbeat' });
    const d = await deliveryOf(runId);
    assert.equal(d.state, 'delivered', d.lastError ?? '');
    assert.equal(d.accountId, 'alerts');
    assert.equal(botTokenOf('follow-up to last'), ALERTS_BOT);
  });

  it("the CLI shows the account of the session's route and sets one only if the channel has it", async () => {
    const run = (...args: string[]) =>
      runCli([...args, '--config', hg.configFile], { cwd: hg.dir, env: { ALERTS_BOT } });
    assert.match((await run('sessions', 'show', 'main')).stdout, /route: {6}telegram → 1001 \(account alerts\)/);
    const bad = await run('sessions', 'route', 'main', '--channel', 'telegram', '--to', CHAT, '--account', 'nope');
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /accountId "nope" is not an account of channel "telegram"; use one of: default, alerts/);
    const badTo = await run('sessions', 'route', 'main', '--channel', 'telegram', '--to', '..');
    assert.notEqual(badTo.code, 0);
    assert.match(badTo.stderr, /"to" is not a recipient of channel telegram: expected a chat id like 123456789/);
    assert.deepEqual(
      await store.getRoute('main'),
      { channel: 'telegram', to: CHAT, accountId: 'alerts' },
      'the route is unchanged',
    );
    const ok = await run('sessions', 'route', 'main', '--channel', 'telegram', '--to', CHAT, '--account', 'alerts');
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(await store.getRoute('main'), { channel: 'telegram', to: CHAT, accountId: 'alerts' });
  });

  it('an unknown account, an account with channel "last" and a non-string accountId are refused with 400', async () => {
    const unknown = await hg.post('/hooks/agent', { message: 'm', channel: 'telegram', to: CHAT, accountId: 'nope' });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body?.code, 'invalid_channel');
    assert.match(
      String(unknown.body?.error),
      /accountId "nope" is not an account of channel "telegram"; use one of: default, alerts/,
    );

    const last = await hg.post('/hooks/agent', { message: 'm', channel: 'last', accountId: 'alerts' });
    assert.equal(last.status, 400);
    assert.equal(last.body?.code, 'invalid_channel');
    assert.match(String(last.body?.error), /accountId needs an explicit channel/);
    assert.equal(
      (await hg.post('/hooks/agent', { message: 'm', to: CHAT, accountId: 'alerts' })).status,
      400,
      'no channel is "last"',
    );

    const typed = await hg.post('/hooks/agent', { message: 'm', channel: 'telegram', to: CHAT, accountId: 7 });
    assert.equal(typed.status, 400);
    assert.equal(typed.body?.code, 'invalid_payload');
  });

  it('a delivery whose account a reload removed is dead-lettered with a clear error, not sent through the default bot', async () => {
    telegram.failNext(1, 'rate_limit');
    const runId = await postAgent(hg, {
      message: 'stranded alerts run',
      channel: 'telegram',
      to: CHAT,
      accountId: 'alerts',
      wakeMode: 'next-heartbeat',
    });
    await waitFor('the first attempt to be rate-limited', async () => {
      const [d] = await store.listDeliveries({ runId });
      return d?.lastError ? d : undefined;
    });

    const config = JSON.parse(readFileSync(hg.configFile, 'utf8')) as {
      channels: { telegram: Record<string, unknown> };
    };
    delete config.channels.telegram.accounts;
    const reloads = hg.logs.filter((l) => l.msg === 'config reloaded').length;
    writeFileSync(hg.configFile, JSON.stringify(config, null, 2));
    hg.proc.kill('SIGHUP');
    await waitFor(
      'the config to reload',
      async () => hg.logs.filter((l) => l.msg === 'config reloaded').length > reloads || undefined,
    );

    const d = await waitFor(
      'the delivery to be dead',
      async () => {
        const [row] = await store.listDeliveries({ runId });
        return row?.state === 'dead' ? row : undefined;
      },
      15_000,
    );
    assert.match(d.lastError ?? '', /^account "alerts" of channel "telegram" is not configured \(any more\)/);
    assert.equal(
      telegram.received.some((m) => m.text.includes('stranded alerts run')),
      false,
      'sent through another bot',
    );
    assert.ok(!JSON.stringify(hg.logs).includes(ALERTS_BOT.split(':')[1]!), 'a bot token reached the log');
  });
});
