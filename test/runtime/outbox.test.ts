import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { loadChannelPlugin, type ChannelRegistry } from '../../src/channels/registry.js';
import { createTelegramChannel } from '../../src/channels/telegram.js';
import type { Channel, OutboundMessage, SendResult } from '../../src/channels/types.js';
import { telegramSchema } from '../../src/config/schema/channels.js';
import { createLogger } from '../../src/log.js';
import type { RuntimeEnv } from '../../src/runtime/env.js';
import { DELIVERY_FOLLOWERS, deliveryRetryDelayMs, MIN_HINTED_WAIT_MS, Outbox } from '../../src/runtime/outbox.js';
import { RunWorker } from '../../src/runtime/run-worker.js';
import type { Delivery, DeliveryOutcome, Store } from '../../src/store/types.js';
import { recordingContext } from '../support/platforms/fixtures.js';
import { startTelegram, TELEGRAM_TEST_TOKEN, type TelegramMessage } from '../support/platforms/telegram.js';
import type { StandIn } from '../support/platforms/base.js';
import { waitFor } from '../support/wait.js';
import { tempDir } from '../support/temp-dir.js';
import { envWithChannel, type RuntimeKit, startRuntimeKit } from './kit.js';

const LIMITS = { maxAttempts: 5, initialBackoffMs: 10_000, maxBackoffMs: 60_000, concurrency: 1 };

function delivery(over: Partial<Delivery> = {}): Delivery {
  const now = Date.now();
  return {
    id: `dlv_${Math.random().toString(36).slice(2, 10)}`,
    runId: 'run_1',
    heartbeatId: null,
    sessionKey: 'hook:test',
    agentId: 'main',
    hookName: 'Test',
    channel: 'test',
    to: '1001',
    accountId: null,
    text: 'hello',
    explicitRoute: false,
    createdAt: now,
    state: 'pending',
    chunksSent: 0,
    attempts: 1,
    nextAttemptAt: now,
    lastError: null,
    updatedAt: now,
    deliveredAt: null,
    ...over,
  };
}

/** A channel that records what it is given and answers `result`. */
function recordingChannel(result: SendResult): Channel & { sent: OutboundMessage[] } {
  const sent: OutboundMessage[] = [];
  return { id: 'test', maxTextLength: 1000, sent, send: async (m) => (sent.push(m), result) };
}

interface Attempt {
  outcome: DeliveryOutcome;
  logs: Array<Record<string, unknown>>;
}

/**
 * Runs one delivery through a real Outbox with a store that holds just that row, and returns how the outbox finished
 * it. A delivery that is not finished within 3 s would only come back when its lease lapses: that fails the test.
 */
async function attempt(channel: Channel, d: Delivery, accounts: Record<string, Channel> = {}): Promise<Attempt> {
  const logs: Attempt['logs'] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  let queue = [d];
  let finish!: (o: DeliveryOutcome) => void;
  const finished = new Promise<DeliveryOutcome>((resolve) => (finish = resolve));
  const store = {
    claimDeliveries: async (_owner: string, _now: number, _lease: number, n: number) => queue.splice(0, n),
    deliveryProgress: async () => undefined,
    finishDelivery: async (_id: string, _owner: string, outcome: DeliveryOutcome) => finish(outcome),
  } as unknown as Store;
  const channels: ChannelRegistry = {
    get: (id, accountId) => (id !== channel.id ? undefined : accountId === undefined ? channel : accounts[accountId]),
    ids: () => [channel.id],
    normalize: (n) => n,
    checkRecipient: () => undefined,
    close: async () => undefined,
  };
  const env = {
    config: { channels: { outbox: LIMITS } },
    providers: new Map(),
    channels,
    defaultAgentId: 'main',
  } as unknown as RuntimeEnv;
  const outbox = new Outbox({
    store,
    logger: createLogger('info', { pretty: false, destination }),
    owner: 'test-owner',
    env: () => env,
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    outbox.notify();
    const outcome = await Promise.race([
      finished,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`delivery not finished; logs: ${JSON.stringify(logs)}`)), 3000);
      }),
    ]);
    return { outcome, logs };
  } finally {
    clearTimeout(timer);
    queue = [];
    await outbox.close(100);
  }
}

const retryLog = (a: Attempt) => a.logs.find((l) => l.msg === 'delivery failed; will retry');

describe('outbox: a channel that throws', () => {
  let dir: string;
  before(() => {
    dir = tempDir('hookgate-outbox-');
    writeFileSync(
      join(dir, 'throws-sync.mjs'),
      "export default { id: 'throwsync', maxTextLength: 1000, send() { throw new Error('sync boom'); } };\n",
    );
    writeFileSync(
      join(dir, 'rejects.mjs'),
      "export default { id: 'rejects', maxTextLength: 1000, async send() { throw new Error('async boom'); } };\n",
    );
  });

  for (const [file, id, message] of [
    ['throws-sync.mjs', 'throwsync', 'sync boom'],
    ['rejects.mjs', 'rejects', 'async boom'],
  ] as const) {
    it(`a plugin whose send ${id === 'throwsync' ? 'throws synchronously' : 'rejects'} is recorded as a retry at once`, async () => {
      const plugin = await loadChannelPlugin(`./${file}`, recordingContext(dir));
      const a = await attempt(plugin, delivery({ channel: id }));
      assert.equal(a.outcome.kind, 'retry');
      assert.equal(a.outcome.kind === 'retry' && a.outcome.error, `channel threw: ${message}`);
      const wait = (a.outcome.kind === 'retry' ? a.outcome.nextAttemptAt : 0) - Date.now();
      assert.ok(wait > LIMITS.initialBackoffMs / 2 - 1000 && wait <= LIMITS.initialBackoffMs, `retry in ${wait} ms`);
      assert.equal(retryLog(a)?.error, `channel threw: ${message}`);
      assert.equal(
        a.logs.some((l) => l.msg === 'working on deliveries failed'),
        false,
        'the throw escaped the outbox',
      );
    });
  }

  it('a thrown non-Error is described too', async () => {
    const channel: Channel = {
      id: 'test',
      maxTextLength: 1000,
      send: () => {
        throw 'just a string';
      },
    };
    const a = await attempt(channel, delivery());
    assert.equal(a.outcome.kind === 'retry' && a.outcome.error, 'channel threw: just a string');
  });

  it('a send that resolves to something other than a SendResult is a retry, not a crash', async () => {
    for (const answer of [undefined, null, 'sent', { delivered: true }]) {
      const channel: Channel = { id: 'test', maxTextLength: 1000, send: async () => answer as never };
      const a = await attempt(channel, delivery());
      assert.equal(a.outcome.kind, 'retry', `answer ${JSON.stringify(answer)}`);
      assert.match(a.outcome.kind === 'retry' ? a.outcome.error : '', /answered without a result/);
      assert.equal(
        a.logs.some((l) => l.msg === 'working on deliveries failed'),
        false,
        'escaped the outbox',
      );
    }
  });
});

describe('outbox: channel accounts', () => {
  it('a delivery with an account goes through that account’s channel', async () => {
    const main = recordingChannel({ ok: true });
    const alerts = recordingChannel({ ok: true });
    const a = await attempt(main, delivery({ accountId: 'alerts', explicitRoute: true }), { alerts });
    assert.equal(alerts.sent.length, 1);
    assert.equal(main.sent.length, 0);
    assert.equal(a.outcome.kind, 'delivered');
  });

  it('without an account it goes through the default one', async () => {
    const main = recordingChannel({ ok: true });
    const alerts = recordingChannel({ ok: true });
    await attempt(main, delivery({ explicitRoute: true }), { alerts });
    assert.deepEqual([main.sent.length, alerts.sent.length], [1, 0]);
  });

  it('an account that is gone (a reload removed it) dead-letters the delivery at once, never sending through another account', async () => {
    const main = recordingChannel({ ok: true });
    const a = await attempt(main, delivery({ accountId: 'alerts' }));
    assert.equal(main.sent.length, 0, 'sent through the default account instead');
    assert.equal(a.outcome.kind, 'dead');
    assert.match(
      a.outcome.kind === 'dead' ? a.outcome.error : '',
      /^account "alerts" of channel "test" is not configured \(any more\); add it back under channels\.test\.accounts/,
    );
    const logged = a.logs.find((l) => l.msg === 'delivery dead-lettered');
    assert.equal(logged?.accountId, 'alerts');
  });
});

describe('outbox: a recipient the channel cannot take', () => {
  it('is dead-lettered at once, never sent (a route stored before the check, or set by hand)', async () => {
    const digitsOnly = {
      ...recordingChannel({ ok: true }),
      checkRecipient: (to: string) => (/^[0-9]+$/.test(to) ? undefined : 'digits only'),
    };
    for (const to of ['..', '.', 'abc', '1\n2']) {
      const a = await attempt(digitsOnly, delivery({ to }));
      assert.equal(a.outcome.kind, 'dead', to);
      assert.equal(
        a.outcome.kind === 'dead' && a.outcome.error,
        '"to" is not a recipient of channel test: expected digits only',
      );
    }
    // The shared rule holds for a channel without its own (a plugin): never "." or "..".
    const plain = recordingChannel({ ok: true });
    const dots = await attempt(plain, delivery({ to: '..' }));
    assert.match(dots.outcome.kind === 'dead' ? dots.outcome.error : '', /not "\." or "\.\."/);
    assert.deepEqual([digitsOnly.sent.length, plain.sent.length], [0, 0]);
    assert.equal((await attempt(digitsOnly, delivery({ to: ' 1001 ' }))).outcome.kind, 'delivered', 'trimmed first');
  });
});

describe("outbox: the main session's route", () => {
  let kit: RuntimeKit;
  let worker: RunWorker | undefined;
  let outbox: Outbox | undefined;
  let sent: OutboundMessage[];

  beforeEach(async () => {
    kit = await startRuntimeKit({ handler: () => 'the reply' });
    const channel = recordingChannel({ ok: true });
    sent = channel.sent;
    const env = envWithChannel(kit.env, channel);
    const deps = { ...kit.deps, env: () => env };
    outbox = new Outbox(deps);
    worker = new RunWorker(deps, { onFinished: (_run, committed) => void (committed && outbox!.notify()) });
  });

  afterEach(async () => {
    await worker?.close(0);
    await outbox?.close(0);
    await kit.close();
  });

  /** A hook run that names its own channel and recipient, worked and delivered by the real run worker and outbox. */
  async function deliverExplicit(to: string): Promise<void> {
    const id = await kit.queueRun({ channel: 'test', to, deliver: true });
    worker!.notify();
    await waitFor(
      'the explicit delivery to be delivered',
      async () => (await kit.store.listDeliveries({ runId: id }))[0]?.state === 'delivered',
      30_000,
    );
  }

  it("a delivered explicit-route run goes where it asked and leaves the operator's route as it was", async () => {
    await kit.store.setRoute('main', 'main', 'test', 'owner-chat', Date.now());
    await deliverExplicit('attacker-chat');
    assert.deepEqual(
      sent.map((m) => m.to),
      ['attacker-chat'],
    );
    assert.deepEqual(await kit.store.getRoute('main'), { channel: 'test', to: 'owner-chat', accountId: null });
  });

  it('a delivered explicit-route run gives a main session without a route none (channels.default stays in force)', async () => {
    await deliverExplicit('attacker-chat');
    assert.equal(await kit.store.getRoute('main'), undefined);
  });
});

describe('outbox: the recipient', () => {
  let telegram: StandIn<TelegramMessage>;
  before(async () => {
    telegram = await startTelegram();
  });
  after(() => telegram.close());

  it('is trimmed once before the channel is called', async () => {
    const channel = recordingChannel({ ok: true });
    const a = await attempt(channel, delivery({ to: ' \t1001\n ', explicitRoute: true }));
    assert.deepEqual(
      channel.sent.map((m) => m.to),
      ['1001'],
    );
    assert.equal(a.outcome.kind, 'delivered');
  });

  it('reaches a channel that does not trim by itself (telegram) as the bare chat id', async () => {
    const channel = createTelegramChannel(
      telegramSchema.parse({ botToken: TELEGRAM_TEST_TOKEN, apiBaseUrl: telegram.url }),
      recordingContext(),
    );
    const a = await attempt(channel, delivery({ channel: 'telegram', to: '  1001 \n', text: 'trimmed recipient' }));
    assert.equal(a.outcome.kind, 'delivered', JSON.stringify(a.outcome));
    assert.deepEqual(telegram.received.at(-1), {
      chatId: '1001',
      text: 'trimmed recipient',
      messageId: telegram.received.at(-1)?.messageId,
    });
  });
});

describe("outbox: a platform's Retry-After is the wait, bounded", () => {
  const failing = (retryAfterMs: number) =>
    recordingChannel({ ok: false, retryable: true, status: 429, error: 'slow down', retryAfterMs });

  it('a hint of 0 (or a few ms) waits 1 s, not a busy loop and not the backoff', async () => {
    for (const hint of [0, 5]) {
      const a = await attempt(failing(hint), delivery({ attempts: 2 }));
      assert.equal(retryLog(a)?.retryInMs, MIN_HINTED_WAIT_MS, `hint ${hint}`);
      assert.ok(a.outcome.kind === 'retry' && a.outcome.nextAttemptAt - Date.now() <= MIN_HINTED_WAIT_MS);
    }
  });

  it("a hint shorter than the backoff is waited exactly (Telegram's retry_after: 1)", async () => {
    const a = await attempt(failing(1000), delivery({ attempts: 3 }));
    assert.equal(retryLog(a)?.retryInMs, 1000);
  });

  it('a huge hint (an HTTP date days away) waits maxBackoffMs, no longer', async () => {
    const a = await attempt(failing(3 * 24 * 3_600_000), delivery());
    assert.equal(retryLog(a)?.retryInMs, LIMITS.maxBackoffMs);
    assert.ok(a.outcome.kind === 'retry' && a.outcome.nextAttemptAt - Date.now() <= LIMITS.maxBackoffMs);
  });

  it('a hint longer than the backoff is waited exactly', async () => {
    const a = await attempt(failing(25_000), delivery());
    assert.equal(retryLog(a)?.retryInMs, 25_000);
  });

  it('deliveryRetryDelayMs: the hint when there is one (1 s to maxBackoffMs), else the jittered backoff', () => {
    const limits = { initialBackoffMs: 1000, maxBackoffMs: 8000 };
    const low = () => 0;
    const high = () => 0.999999;
    assert.equal(deliveryRetryDelayMs(1, undefined, limits, low), 500);
    assert.equal(deliveryRetryDelayMs(1, undefined, limits, high), 1000);
    assert.equal(deliveryRetryDelayMs(3, undefined, limits, low), 2000);
    assert.equal(deliveryRetryDelayMs(9, undefined, limits, high), 8000);
    assert.equal(deliveryRetryDelayMs(1, 0, limits, low), 1000, 'a 0 hint waits 1 s');
    assert.equal(deliveryRetryDelayMs(4, 1, limits, low), 1000, 'so does a tiny one, at any attempt');
    assert.equal(
      deliveryRetryDelayMs(4, 1500, limits, high),
      1500,
      'a hint shorter than the backoff is waited exactly',
    );
    assert.equal(deliveryRetryDelayMs(1, 3000, limits, high), 3000, 'a longer hint is waited exactly');
    assert.equal(deliveryRetryDelayMs(1, 8000, limits, low), 8000);
    assert.equal(deliveryRetryDelayMs(1, 8001, limits, low), 8000, 'never beyond maxBackoffMs');
    assert.equal(deliveryRetryDelayMs(1, 3 * 24 * 3_600_000, limits, low), 8000);
  });
});

describe("outbox: a route's batch", () => {
  /** A real Outbox over a store holding `rows` (one route) whose finishDelivery waits for `answer`. */
  function batchOutbox(
    rows: Delivery[],
    finishDelivery: (id: string, outcome: DeliveryOutcome) => Promise<unknown>,
    concurrency = LIMITS.concurrency,
  ) {
    const logs: Array<Record<string, unknown>> = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n'))
          if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    let queue = [...rows];
    const released: string[] = [];
    const claims: number[] = [];
    const store = {
      claimDeliveries: async () => (claims.push(Date.now()), queue.splice(0)),
      deliveryProgress: async () => undefined,
      finishDelivery: async (id: string, _owner: string, outcome: DeliveryOutcome) => finishDelivery(id, outcome),
      releaseDeliveries: async (_owner: string, ids: string[]) => void released.push(...ids),
      getRoute: async () => undefined,
    } as unknown as Store;
    const channel = recordingChannel({ ok: true });
    const channels: ChannelRegistry = {
      get: (id) => (id === 'test' ? channel : undefined),
      ids: () => ['test'],
      normalize: (n) => n,
      checkRecipient: () => undefined,
      close: async () => undefined,
    };
    const env = {
      config: { channels: { outbox: { ...LIMITS, concurrency } } },
      providers: new Map(),
      channels,
      defaultAgentId: 'main',
    } as unknown as RuntimeEnv;
    const outbox = new Outbox({
      store,
      logger: createLogger('info', { pretty: false, destination }),
      owner: 'test-owner',
      env: () => env,
    });
    return { outbox, channel, logs, released, claims, clear: () => (queue = []) };
  }
  const until = async (cond: () => boolean, what: string) => {
    for (let i = 0; i < 300 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(cond(), `timed out waiting for ${what}`);
  };

  it('sends every delivery in order without waiting for each outcome to commit; the batch ends when they all have', async () => {
    const rows = [delivery({ text: 'one' }), delivery({ text: 'two' }), delivery({ text: 'three' })];
    const commits: Array<{ id: string; commit: () => void }> = [];
    const t = batchOutbox(rows, (id) => new Promise<void>((resolve) => commits.push({ id, commit: resolve })));
    try {
      t.outbox.notify();
      await until(() => commits.length === 3, 'three outcome writes');
      // All three were sent, in order, while no outcome had committed yet.
      assert.deepEqual(
        t.channel.sent.map((m) => m.text),
        ['one', 'two', 'three'],
      );
      assert.deepEqual(
        commits.map((c) => c.id),
        rows.map((r) => r.id),
      );
      assert.equal(t.outbox.sending, 0);
      for (const c of commits) c.commit();
      await until(() => t.logs.filter((l) => l.msg === 'delivered').length === 3, 'three delivered lines');
      assert.deepEqual(t.released, []);
    } finally {
      for (const c of commits) c.commit();
      t.clear();
      await t.outbox.close(100);
    }
  });

  it('an outcome whose write fails stops the batch: what was not sent goes back, and the failure is logged', async () => {
    const rows = [delivery({ text: 'one' }), delivery({ text: 'two' }), delivery({ text: 'three' })];
    let fail!: (err: Error) => void;
    const t = batchOutbox(rows, (id) =>
      id === rows[0]!.id ? new Promise<void>((_, reject) => (fail = reject)) : Promise.resolve(),
    );
    try {
      t.outbox.notify();
      await until(() => t.channel.sent.length >= 1, 'the first send');
      // Fails before the second send's turn comes: the write is a programming error, not an outage (not retried).
      fail(new Error('constraint failed'));
      await until(() => t.logs.some((l) => l.msg === 'working on deliveries failed'), 'the failure logged');
      const sent = t.channel.sent.map((m) => m.text);
      // Whatever was sent before the failure was seen stays sent (at least once); the rest went back, in order.
      assert.deepEqual(
        t.released,
        rows.slice(sent.length).map((r) => r.id),
      );
      assert.equal(t.logs.find((l) => l.msg === 'working on deliveries failed')?.err, 'constraint failed');
    } finally {
      t.clear();
      await t.outbox.close(100);
    }
  });

  it('a batch that came with all the followers it may have claims its route again when it ends; a shorter one does not', async () => {
    const full = Array.from({ length: DELIVERY_FOLLOWERS + 1 }, (_, i) => delivery({ to: '1001', text: `m${i}` }));
    const t = batchOutbox(full, () => Promise.resolve(), 4);
    try {
      t.outbox.notify();
      await until(() => t.logs.filter((l) => l.msg === 'delivered').length === full.length, 'the full batch delivered');
      // Within a few turns of its end, not at the next poll (a second away).
      for (let i = 0; i < 20 && t.claims.length < 2; i++) await new Promise((r) => setImmediate(r));
      assert.equal(t.claims.length, 2, 'a second claim, untold, once the full batch ended');
    } finally {
      t.clear();
      await t.outbox.close(100);
    }
    const short = Array.from({ length: DELIVERY_FOLLOWERS }, (_, i) => delivery({ to: '1001', text: `s${i}` }));
    const u = batchOutbox(short, () => Promise.resolve(), 4);
    try {
      u.outbox.notify();
      await until(
        () => u.logs.filter((l) => l.msg === 'delivered').length === short.length,
        'the short batch delivered',
      );
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      assert.equal(u.claims.length, 1, 'a batch short of the cap took all there was: no claim after it');
    } finally {
      u.clear();
      await u.outbox.close(100);
    }
  });

  it('told of a new delivery to a route whose batch is in hand, claims nothing then; the batch claims again when it ends', async () => {
    const commits: Array<() => void> = [];
    const t = batchOutbox([delivery({ to: '1001' })], () => new Promise<void>((resolve) => commits.push(resolve)), 4);
    const ticks = async () => {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    };
    try {
      t.outbox.notify();
      await until(() => commits.length === 1, 'the batch sent, its outcome not yet committed');
      const claimed = t.claims.length;
      t.outbox.notify([{ channel: 'test', accountId: null, to: '1001' }]);
      await ticks();
      assert.equal(t.claims.length, claimed, 'same route, batch in hand: no claim');
      t.outbox.notify([{ channel: 'test', accountId: null, to: '2002' }]);
      await until(() => t.claims.length === claimed + 1, 'a claim for another route');
      commits[0]!();
      await until(() => t.claims.length === claimed + 2, 'the claim once the batch ended');
    } finally {
      for (const c of commits) c();
      t.clear();
      await t.outbox.close(100);
    }
  });
});
