/**
 * The outbox (docs/reference.md#deliveries-retries-and-dead-letters) against the real server process and local
 * stand-ins of the receiving APIs: retries honouring Retry-After, dead letters visible and retryable from the CLI,
 * permanent failures, per-recipient order, long replies split at a platform's limit (resuming after a failed chunk),
 * and a core platform (Telegram) end to end. Run `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import type { Delivery } from '../../src/store/types.js';
import {
  DISCORD_TEST_TOKEN,
  type DiscordMessage,
  type StandIn,
  startDiscord,
  startTelegram,
  TELEGRAM_TEST_TOKEN,
  type TelegramMessage,
} from '../support/platforms/index.js';
import {
  cli,
  openServerStore,
  postAgent,
  startServer,
  waitFor,
  waitForRun,
  webhookDeliveries,
  webhookSecret,
} from '../support/runtime-kit.js';
import type { Hookgate } from '../support/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const DISCORD_CHANNEL = '1100000000000000001';
const uniq = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * A pass-through proxy in front of a stand-in that answers the `failAt`-th POST (1-based) itself with Discord's
 * rate-limit answer, and records the JSON bodies it forwarded.
 */
async function startFailingProxy(
  target: string,
  failAt: number,
): Promise<{ url: string; forwarded: Array<Record<string, unknown>>; close: () => Promise<void> }> {
  const forwarded: Array<Record<string, unknown>> = [];
  let posts = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && ++posts === failAt) {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ message: 'You are being rate limited.', retry_after: 0.3, global: false }));
        return;
      }
      try {
        forwarded.push(JSON.parse(body.toString('utf8')) as Record<string, unknown>);
      } catch {
        /* not JSON */
      }
      const u = new URL(target);
      const up = httpRequest(
        { host: u.hostname, port: u.port, method: req.method, path: req.url, headers: req.headers },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      up.on('error', () => {
        res.writeHead(502);
        res.end();
      });
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwarded,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('outbox', { timeout: 90_000 }, () => {
  const secret = webhookSecret();
  let receiver: WebhookReceiver;
  let telegram: StandIn<TelegramMessage>;
  let discord: StandIn<DiscordMessage>;
  let proxy: Awaited<ReturnType<typeof startFailingProxy>>;
  let hg: Hookgate;
  let store: SqliteStore;

  before(async () => {
    receiver = await startWebhookReceiver(secret);
    telegram = await startTelegram({ retryAfterS: 1 });
    discord = await startDiscord();
    // The 2nd message POST of the server's Discord traffic is rate-limited once: the long-reply test relies on it.
    proxy = await startFailingProxy(discord.url, 2);
    hg = await startServer({
      heartbeat: { every: 'off' },
      hooks: {
        allowRequestSessionKey: true,
        allowedSessionKeyPrefixes: ['hook:'],
        // The recipient comes from the payload: it is checked as a direct request's is.
        mappings: [
          {
            id: 'to-from-payload',
            match: { path: 'relay' },
            messageTemplate: '{{text}}',
            channel: 'discord',
            to: '{{to}}',
            deliver: false,
          },
        ],
      },
      agents: { defaults: { model: 'echo/echo' } },
      channels: {
        // maxBackoffMs caps a platform's Retry-After too: above the 1 s the stand-ins ask for, so it is honoured.
        outbox: { initialBackoffMs: 50, maxBackoffMs: 2000, maxAttempts: 3 },
        webhook: { targets: { ops: { url: receiver.url, secret } } },
        telegram: { botToken: TELEGRAM_TEST_TOKEN, apiBaseUrl: telegram.url },
        discord: { botToken: DISCORD_TEST_TOKEN, apiBaseUrl: proxy.url },
      },
    });
    store = openServerStore(hg);
  });
  after(async () => {
    for (const c of [
      () => store?.close(),
      () => hg?.cleanup(),
      () => receiver?.close(),
      () => telegram?.close(),
      () => proxy?.close(),
      () => discord?.close(),
    ]) {
      try {
        await c();
      } catch {
        /* keep cleaning up */
      }
    }
  });

  /** Post a run that delivers to channel/to; wait for its (single) delivery row to reach a final state. */
  async function deliverRun(
    body: Record<string, unknown>,
    final: Array<Delivery['state']> = ['delivered', 'dead'],
    timeoutMs = 15_000,
  ): Promise<{ runId: string; reply: string; delivery: Delivery }> {
    const runId = await postAgent(hg, { wakeMode: 'next-heartbeat', ...body });
    const run = await waitForRun(store, runId);
    assert.equal(run.state, 'succeeded', run.error ?? '');
    assert.equal(run.deliveryStatus, 'outbox');
    const delivery = await waitFor(
      `delivery of run ${runId} to be ${final.join('/')}`,
      async () => {
        const [d] = await store.listDeliveries({ runId });
        return d && final.includes(d.state) ? d : undefined;
      },
      timeoutMs,
    );
    return { runId, reply: run.reply!, delivery };
  }

  const logsOf = (deliveryId: string, msg: string) =>
    hg.logs.filter((l) => l.deliveryId === deliveryId && l.msg === msg);

  it('webhook: 429 twice (Retry-After: 1) then 200 arrives exactly once, after waiting as asked', async () => {
    receiver.script.push(
      { status: 429, headers: { 'retry-after': '1' } },
      { status: 429, headers: { 'retry-after': '1' } },
    );
    const { runId, reply, delivery } = await deliverRun({
      message: uniq('rate limited webhook'),
      channel: 'webhook',
      to: 'ops',
    });
    assert.equal(delivery.state, 'delivered');
    assert.equal(delivery.attempts, 3);
    const got = webhookDeliveries(receiver).filter((d) => d.body.runId === runId);
    assert.equal(got.length, 3, 'two refused attempts and one accepted');
    assert.deepEqual(
      new Set(got.map((d) => d.id)),
      new Set([delivery.id]),
      'every attempt carries the delivery id as webhook-id',
    );
    for (const d of got) {
      assert.ok(d.verified, d.raw.failure);
      assert.equal(d.body.text, reply);
    }
    const retries = logsOf(delivery.id, 'delivery failed; will retry');
    assert.equal(retries.length, 2);
    for (const l of retries) {
      assert.equal(l.retryInMs, 1000, 'Retry-After not honoured');
      assert.equal(l.runId, runId);
    }
    const delivered = await waitFor('delivered log', () => logsOf(delivery.id, 'delivered')[0]);
    assert.ok((delivered.time as number) - (retries[0]!.time as number) >= 1900, 'retried before Retry-After elapsed');
  });

  it('telegram: rate-limited twice (retry_after) then sent: the chat gets the message once', async () => {
    telegram.failNext(2, 'rate_limit');
    const before = telegram.requests.length;
    const { reply, delivery } = await deliverRun({ message: uniq('telegram hello'), channel: 'telegram', to: '1001' });
    assert.equal(delivery.state, 'delivered');
    assert.equal(delivery.attempts, 3);
    assert.equal(telegram.requests.length - before, 3);
    const msgs = telegram.received.filter((m) => m.text === reply);
    assert.deepEqual(
      msgs.map((m) => m.chatId),
      ['1001'],
    );
    assert.ok(
      logsOf(delivery.id, 'delivery failed; will retry').every((l) => l.retryInMs === 1000),
      'retry_after not honoured',
    );
  });

  it('always failing (500) ends dead-lettered, visible in the CLI and the log; retried from the CLI once the receiver recovers', async () => {
    receiver.script.push({ status: 500 }, { status: 500 }, { status: 500 });
    const { runId, delivery } = await deliverRun({
      message: uniq('never gets through'),
      channel: 'webhook',
      to: 'ops',
    });
    assert.equal(delivery.state, 'dead');
    assert.equal(delivery.attempts, 3);
    assert.equal(delivery.lastError, 'gave up after 3 attempts: webhook target "ops" answered 500');
    assert.equal(webhookDeliveries(receiver).filter((d) => d.body.runId === runId).length, 3);

    const list = await cli(hg, 'deliveries', 'list', '--failed');
    assert.equal(list.code, 0, list.stderr);
    const row = list.stdout.split('\n').find((l) => l.startsWith(delivery.id));
    assert.ok(row, list.stdout);
    assert.match(row, /\bfailed\b/);
    assert.doesNotMatch(row, /\bdead\b/, 'one word for a dead letter: failed');
    assert.ok(row.includes(runId), `run id missing: ${row}`);
    assert.ok(row.includes('gave up after 3 attempts'), `last error missing: ${row}`);
    const json = JSON.parse((await cli(hg, 'deliveries', 'list', '--failed', '--json')).stdout) as Array<
      Record<string, unknown>
    >;
    const mine = json.find((d) => d.id === delivery.id);
    assert.equal(mine?.runId, runId);
    assert.equal(mine?.lastError, delivery.lastError);
    assert.equal(mine?.state, 'failed');
    // --state takes the same word, and the older spelling as an alias; anything else is refused.
    for (const word of ['failed', 'dead']) {
      const byState = await cli(hg, 'deliveries', 'list', '--state', word, '--json');
      assert.equal(byState.code, 0, byState.stderr);
      const ids = (JSON.parse(byState.stdout) as Array<{ id: string; state: string }>).map((d) => [d.id, d.state]);
      assert.deepEqual(
        ids.find(([id]) => id === delivery.id),
        [delivery.id, 'failed'],
        word,
      );
    }
    const sentOnly = await cli(hg, 'deliveries', 'list', '--state', 'delivered', '--json');
    assert.equal(sentOnly.code, 0, sentOnly.stderr);
    assert.ok((JSON.parse(sentOnly.stdout) as Array<{ state: string }>).every((d) => d.state === 'sent'));
    const bad = await cli(hg, 'deliveries', 'list', '--state', 'retry');
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /Allowed choices are pending, sent, failed/);
    // Never hidden behind a success: the run is fine, its delivery is shown as failed.
    const show = await cli(hg, 'runs', 'show', runId);
    assert.match(
      show.stdout,
      new RegExp(`delivery: +${delivery.id} failed → webhook:ops \\(attempts 3, last error: gave up`),
    );
    const dead = await waitFor('dead-letter log line', () => logsOf(delivery.id, 'delivery dead-lettered')[0]);
    assert.equal(dead.runId, runId);
    assert.equal(dead.level, 50, 'logged at error level');

    // The receiver recovers (answers 200 again); the operator retries.
    const retry = await cli(hg, 'deliveries', 'retry', delivery.id);
    assert.equal(retry.code, 0, retry.stderr);
    assert.match(retry.stdout, /queued again/);
    const ok = await waitFor('delivered after the retry', async () =>
      (await store.getDelivery(delivery.id))?.state === 'delivered' ? store.getDelivery(delivery.id) : undefined,
    );
    assert.equal(ok!.lastError, null);
    const all = webhookDeliveries(receiver).filter((d) => d.body.runId === runId);
    assert.equal(all.length, 4);
    assert.ok(
      all.every((d) => d.id === delivery.id && d.verified),
      'another webhook-id, or unsigned',
    );
    assert.equal((await cli(hg, 'deliveries', 'list', '--failed', '--json')).stdout.includes(delivery.id), false);
  });

  it('a permanent failure dead-letters at once: webhook 400, telegram unknown chat', async () => {
    receiver.script.push({ status: 400 });
    const web = await deliverRun({ message: uniq('bad request'), channel: 'webhook', to: 'ops' });
    assert.equal(web.delivery.state, 'dead');
    assert.equal(web.delivery.attempts, 1);
    assert.equal(web.delivery.lastError, 'webhook target "ops" answered 400');
    assert.equal(webhookDeliveries(receiver).filter((d) => d.body.runId === web.runId).length, 1);

    const before = telegram.requests.length;
    const tg = await deliverRun({ message: uniq('to nobody'), channel: 'telegram', to: '999' });
    assert.equal(tg.delivery.state, 'dead');
    assert.equal(tg.delivery.attempts, 1);
    assert.match(tg.delivery.lastError ?? '', /chat not found/);
    assert.equal(telegram.requests.length - before, 1);
    assert.ok(
      !(tg.delivery.lastError ?? '').includes(TELEGRAM_TEST_TOKEN.split(':')[1]!),
      'the bot token leaked into the error',
    );
  });

  it('deliveries to one recipient keep their order while the first one waits to be retried', async () => {
    const key = `hook:${uniq('ordered')}`;
    telegram.failNext(1, 'rate_limit');
    const first = uniq('first in line');
    const second = uniq('second in line');
    const r1 = await postAgent(hg, {
      message: first,
      sessionKey: key,
      channel: 'telegram',
      to: '1001',
      wakeMode: 'next-heartbeat',
    });
    const r2 = await postAgent(hg, {
      message: second,
      sessionKey: key,
      channel: 'telegram',
      to: '1001',
      wakeMode: 'next-heartbeat',
    });
    await waitFor(
      'both delivered',
      async () => {
        const ds = [...(await store.listDeliveries({ runId: r1 })), ...(await store.listDeliveries({ runId: r2 }))];
        return ds.length === 2 && ds.every((d) => d.state === 'delivered');
      },
      15_000,
    );
    const order = telegram.received
      .filter((m) => m.text.includes(first) || m.text.includes(second))
      .map((m) => (m.text.includes(first) ? 'first' : 'second'));
    assert.deepEqual(order, ['first', 'second']);
  });

  it('a long reply to Discord (2000 characters) arrives as several messages in order; a failed chunk is resumed, not repeated', async () => {
    const tag = uniq('long');
    const paragraph = (n: number) => `${tag} paragraph ${n}: ${'lorem ipsum dolor sit amet '.repeat(55).trim()}.`;
    const message = [1, 2, 3].map(paragraph).join('\n\n');
    const before = discord.received.length;
    const { reply, delivery } = await deliverRun({ message, channel: 'discord', to: DISCORD_CHANNEL });
    assert.ok(reply.length > 4000, `reply is only ${reply.length} characters`);
    assert.equal(delivery.state, 'delivered');
    const got = discord.received.slice(before);
    assert.equal(got.length, 3, `${got.length} messages`);
    for (const m of got) {
      assert.equal(m.channelId, DISCORD_CHANNEL);
      assert.ok([...m.content].length <= 2000, `a message of ${m.content.length} characters`);
    }
    assert.equal(got.map((m) => m.content).join(''), reply, 'the chunks do not add up to the reply, in order');
    // The proxy refused the 2nd chunk once: chunk 1 was not sent again, chunk 2 was (with the same nonce).
    assert.deepEqual(
      proxy.forwarded.map((b) => b.content),
      got.map((m) => m.content),
      'a chunk was sent twice',
    );
    assert.equal(delivery.attempts, 2);
  });

  it("a recipient that is not its platform's shape is refused when accepted (400 invalid_channel): nothing reaches the platform", async () => {
    const sent = discord.requests.length;
    const runsBefore = (await store.listRuns({ limit: 1000 })).length;
    for (const to of ['..', '.', '../../users/@me', 'a/b', '123?x=1']) {
      for (const [path, body] of [
        ['/hooks/agent', { message: 'm', channel: 'discord', to }],
        ['/hooks/relay', { text: 'm', to }],
      ] as const) {
        const r = await hg.post(path, body);
        assert.equal(r.status, 400, `${path} ${to}: ${r.text}`);
        assert.equal(r.body?.code, 'invalid_channel');
        assert.match(
          String(r.body?.error),
          /not a recipient of channel discord: expected a channel id: a snowflake, digits only/,
        );
      }
    }
    const webhook = await hg.post('/hooks/agent', {
      message: 'm',
      channel: 'webhook',
      to: 'http://169.254.169.254/latest',
    });
    assert.deepEqual([webhook.status, webhook.body?.code], [400, 'invalid_channel']);
    assert.match(String(webhook.body?.error), /the name of a configured target \(channels\.webhook\.targets: "ops"\)/);
    assert.equal(discord.requests.length, sent, 'no request reached the Discord stand-in');
    assert.equal((await store.listRuns({ limit: 1000 })).length, runsBefore, 'no run was stored (no model spend)');
    // The mapped route itself works with a real channel id (it does not deliver: the proxy counts Discord's POSTs).
    const ok = await hg.post('/hooks/relay', { text: 'relayed', to: DISCORD_CHANNEL });
    assert.equal(ok.status, 200, ok.text);
  });

  it('send agent --channel webhook --to <no such target> is refused at accept (400 invalid_channel), like an unknown channel', async () => {
    const runsBefore = (await store.listRuns({ limit: 1000 })).length;
    const deliveriesBefore = (await store.listDeliveries({ limit: 1000 })).length;
    const r = await cli(
      hg,
      'send',
      'agent',
      uniq('to nobody'),
      '--channel',
      'webhook',
      '--to',
      'nobody',
      '--url',
      hg.url,
    );
    assert.equal(r.code, 1, `${r.stdout}${r.stderr}`);
    assert.ok(r.stdout.trim(), `no answer on stdout; stderr: ${r.stderr}`);
    const answer = JSON.parse(r.stdout) as { ok: boolean; code: string; error: string };
    assert.deepEqual([answer.ok, answer.code], [false, 'invalid_channel']);
    assert.match(answer.error, /the name of a configured target \(channels\.webhook\.targets: "ops"\)/);
    const channel = await cli(
      hg,
      'send',
      'agent',
      uniq('nowhere'),
      '--channel',
      'nowhere',
      '--to',
      'x',
      '--url',
      hg.url,
    );
    assert.equal(channel.code, 1, 'an unknown channel is refused the same way');
    assert.equal((JSON.parse(channel.stdout) as { code: string }).code, 'invalid_channel');
    assert.equal((await store.listRuns({ limit: 1000 })).length, runsBefore, 'no run was stored (no model spend)');
    assert.equal((await store.listDeliveries({ limit: 1000 })).length, deliveriesBefore, 'nothing dead-lettered');
  });
});
