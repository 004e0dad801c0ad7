/**
 * A platform's wait hint is the wait: with the outbox's default settings, a Telegram reply answered
 * 429 `retry_after: 1` is sent about a second later — not after the backoff (30 s, then 60 s… before) — and the
 * next message to the same chat, queued behind it, is not held back: both arrive within a few seconds, in order.
 * Run `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { type StandIn, startTelegram, TELEGRAM_TEST_TOKEN, type TelegramMessage } from '../support/platforms/index.js';
import { openServerStore, postAgent, startServer, waitFor } from '../support/runtime-kit.js';
import type { Hookgate } from '../support/server.js';

describe('outbox: Telegram retry_after with the default backoff settings', { timeout: 60_000 }, () => {
  let telegram: StandIn<TelegramMessage>;
  let hg: Hookgate;
  let store: SqliteStore;

  before(async () => {
    telegram = await startTelegram({ retryAfterS: 1 });
    hg = await startServer({
      heartbeat: { every: 'off' },
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
      // No channels.outbox: the defaults are what is tested.
      channels: { telegram: { botToken: TELEGRAM_TEST_TOKEN, apiBaseUrl: telegram.url } },
    });
    store = openServerStore(hg);
  });
  after(async () => {
    store?.close();
    await hg?.cleanup();
    await telegram?.close();
  });

  it('a 429 with retry_after: 1 is delivered within a few seconds, and the next message to the chat right after it', async () => {
    telegram.failNext(1, 'rate_limit');
    const key = 'hook:throttled-chat';
    const started = Date.now();
    const first = await postAgent(hg, {
      message: 'first, throttled once',
      sessionKey: key,
      channel: 'telegram',
      to: '1001',
      wakeMode: 'next-heartbeat',
    });
    const second = await postAgent(hg, {
      message: 'second, queued behind it',
      sessionKey: key,
      channel: 'telegram',
      to: '1001',
      wakeMode: 'next-heartbeat',
    });
    const delivered = await waitFor(
      'both delivered',
      async () => {
        const ds = [
          ...(await store.listDeliveries({ runId: first })),
          ...(await store.listDeliveries({ runId: second })),
        ];
        return ds.length === 2 && ds.every((d) => d.state === 'delivered') ? ds : undefined;
      },
      25_000,
    );
    const elapsed = Date.now() - started;
    // The backoff alone would wait 30 s; 15 s tells the hint from it with room for a machine at load average 15
    // (7 s seen there; about 1.3 s idle).
    assert.ok(elapsed < 15_000, `both delivered after ${elapsed} ms; retry_after asked for 1 s, the backoff is 30 s`);
    assert.equal(delivered.find((d) => d.runId === first)?.attempts, 2, 'the first was throttled once');
    const order = telegram.received
      .filter((m) => m.chatId === '1001')
      .map((m) => (m.text.includes('first') ? 'first' : 'second'));
    assert.deepEqual(order, ['first', 'second']);
  });
});
