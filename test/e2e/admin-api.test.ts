/**
 * The admin listener (docs/admin.md) against the real server process: every REST endpoint, the auth
 * rules, invalid_query naming the parameter, pagination without loss or repetition, retry of a failed run and of a
 * dead delivery (each runs at once), /healthz and /readyz (503 once the store cannot write), and the two listeners
 * kept apart. Runs on SQLite, and on PostgreSQL with HOOKGATE_TEST_STORE=postgres. `npm run build` first when
 * running this file alone.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startOpenAIStandin, type OpenAIStandin } from '../support/openai-standin.js';
import { postAgent, postWake, startServer, waitFor, webhookSecret } from '../support/runtime-kit.js';
import { parseMetrics, value } from '../support/prometheus.js';
import { type Hookgate, TOKEN } from '../support/server.js';
import { openSse } from '../support/sse.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';
const uniq = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}`;

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, any>;
}

describe('admin listener: REST API, auth, health', { timeout: 180_000 }, () => {
  let hg: Hookgate;
  let adminUrl: string;
  let ai: OpenAIStandin;
  let receiver: WebhookReceiver;
  const secret = webhookSecret();

  const call = async (
    path: string,
    opts: { method?: string; token?: string | null; base?: string; body?: string } = {},
  ): Promise<Answer> => {
    const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
    const r = await fetch(`${opts.base ?? adminUrl}${path}`, {
      method: opts.method ?? 'GET',
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    });
    const text = await r.text();
    let body: Record<string, any> = {};
    try {
      body = JSON.parse(text) as Record<string, any>;
    } catch {
      /* not JSON */
    }
    return { status: r.status, headers: r.headers, body };
  };
  const get = async (path: string) => {
    const r = await call(path);
    assert.equal(r.status, 200, `${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const runState = (id: string) => get(`/api/v1/runs/${id}`).then((r) => r.state as string);
  const waitRun = (id: string, states: string[]) =>
    waitFor(
      `run ${id} in ${states.join('/')}`,
      async () => {
        const s = await runState(id);
        return states.includes(s) ? s : undefined;
      },
      20_000,
    );
  /** Every item of a list, following nextCursor page by page. */
  const allPages = async (path: string) => {
    const items: Array<Record<string, any>> = [];
    const sizes: number[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 100; i++) {
      const sep = path.includes('?') ? '&' : '?';
      const page = await get(cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path);
      items.push(...page.items);
      sizes.push(page.items.length);
      cursor = page.nextCursor;
      if (cursor === null) return { items, sizes };
    }
    throw new Error('nextCursor never became null');
  };

  before(async () => {
    ai = await startOpenAIStandin();
    receiver = await startWebhookReceiver(secret);
    hg = await startServer({
      heartbeat: { every: 'off' },
      admin: { enabled: true, port: 0, token: ADMIN_TOKEN },
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'], refusals: { windowSeconds: 1 } },
      models: { providers: { local: { api: 'openai-chat', baseUrl: ai.url, apiKey: 'test-key', maxAttempts: 1 } } },
      agents: { defaults: { model: 'echo/echo', retry: { maxSeconds: 1, initialBackoffMs: 100, maxBackoffMs: 200 } } },
      channels: {
        outbox: { initialBackoffMs: 50, maxBackoffMs: 200, maxAttempts: 2 },
        webhook: { targets: { ops: { url: receiver.url, secret } } },
      },
    });
    const listening = hg.logs.find((l) => l.msg === 'hookgate listening')!;
    adminUrl = listening.adminUrl as string;
    assert.match(adminUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(adminUrl, hg.url);
  });
  after(async () => {
    for (const c of [() => hg?.cleanup(), () => ai?.close(), () => receiver?.close()]) {
      try {
        await c();
      } catch {
        /* keep cleaning up */
      }
    }
  });

  it('healthz and readyz answer without a token; readyz names its checks', async () => {
    const h = await call('/healthz', { token: null });
    assert.deepEqual([h.status, h.body], [200, { ok: true }]);
    const r = await call('/readyz', { token: null });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, {
      ok: true,
      checks: { store: { ok: true }, ingress: { ok: true }, config: { ok: true } },
    });
  });

  it('everything else needs the admin token: none, a wrong one and the hook token are 401 unauthorized', async () => {
    for (const token of [null, 'wrong-token', TOKEN, `${ADMIN_TOKEN}x`]) {
      for (const [method, path] of [
        ['GET', '/api/v1/runs'],
        ['GET', '/api/v1/sessions'],
        ['POST', '/api/v1/runs/x/retry'],
        ['GET', '/api/v1/received'],
      ]) {
        const r = await call(path!, { token, method: method! });
        assert.equal(r.status, 401, `${method} ${path} with ${token === null ? 'no token' : 'a bad token'}`);
        assert.deepEqual({ ok: r.body.ok, code: r.body.code }, { ok: false, code: 'unauthorized' });
        assert.equal(typeof r.body.error, 'string');
      }
    }
    // Only `Authorization: Bearer`: the hooks' token headers are not read here.
    const viaHeader = await fetch(`${adminUrl}/api/v1/runs`, { headers: { 'x-hookgate-token': ADMIN_TOKEN } });
    assert.equal(viaHeader.status, 401);
  });

  it('unknown paths are 404 not_found, a wrong method 405 with Allow', async () => {
    const nf = await call('/api/v1/nope');
    assert.deepEqual([nf.status, nf.body.code], [404, 'not_found']);
    const m = await call('/api/v1/runs', { method: 'DELETE' });
    assert.deepEqual([m.status, m.body.code, m.headers.get('allow')], [405, 'method_not_allowed', 'GET']);
    const unknownRun = await call('/api/v1/runs/no-such-run');
    // A run id the store does not know may be one that retention deleted: the code says so.
    assert.deepEqual([unknownRun.status, unknownRun.body.code], [404, 'run_pruned_or_unknown']);
    assert.match(unknownRun.body.error, /hooks\.runRetentionDays/);
    const unknownRetry = await call('/api/v1/deliveries/no-such/retry', { method: 'POST' });
    assert.deepEqual([unknownRetry.status, unknownRetry.body.code], [404, 'not_found']);
  });

  it('the hooks port never answers an admin path, the admin port never answers a hook', async () => {
    for (const path of ['/api/v1/runs', '/healthz', '/readyz']) {
      const r = await call(path, { base: hg.url });
      assert.equal(r.status, 404, `hooks port answered ${path}`);
    }
    const hook = await call('/hooks/wake', {
      base: adminUrl,
      method: 'POST',
      token: TOKEN,
      body: JSON.stringify({ text: 'not here' }),
    });
    assert.equal(hook.status, 404);
    const withAdmin = await call('/hooks/wake', {
      base: adminUrl,
      method: 'POST',
      body: JSON.stringify({ text: 'not here' }),
    });
    assert.equal(withAdmin.status, 404);
    // Nor does the admin token work on the hooks port.
    const r = await call('/hooks/wake', { base: hg.url, method: 'POST', body: JSON.stringify({ text: 'x' }) });
    assert.equal(r.status, 401);
  });

  it('invalid_query names the bad parameter', async () => {
    const cases: Array<[string, string]> = [
      ['/api/v1/runs?limit=0', 'limit'],
      ['/api/v1/runs?limit=201', 'limit'],
      ['/api/v1/runs?limit=abc', 'limit'],
      ['/api/v1/runs?state=done', 'state'],
      ['/api/v1/runs?cursor=nonsense', 'cursor'],
      ['/api/v1/runs?status=failed', 'status'],
      ['/api/v1/deliveries?state=retry', 'state'],
      ['/api/v1/received?outcome=maybe', 'outcome'],
      ['/api/v1/sessions?limit=-1', 'limit'],
      ['/api/v1/overview?since=0', 'since'],
    ];
    for (const [path, param] of cases) {
      const r = await call(path);
      assert.equal(r.status, 400, path);
      assert.equal(r.body.code, 'invalid_query', path);
      assert.ok((r.body.error as string).startsWith(`${param}:`), `${path}: ${r.body.error}`);
    }
    // A cursor of another list is refused too.
    await postWake(hg, uniq('cursor'), 'next-heartbeat');
    await postWake(hg, uniq('cursor'), 'next-heartbeat');
    const received = await get('/api/v1/received?limit=1');
    const r = await call(`/api/v1/runs?cursor=${received.nextCursor}`);
    assert.deepEqual([r.status, r.body.code], [400, 'invalid_query']);
  });

  it('runs: list (newest first, filtered), detail with message, reply, transcript and deliveries; pages lose and repeat nothing', async () => {
    const sessionKey = `hook:${uniq('pages')}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        await postAgent(hg, {
          message: `page ${i}`,
          name: 'Pager',
          sessionKey,
          deliver: false,
          wakeMode: 'next-heartbeat',
        }),
      );
    for (const id of ids) await waitRun(id, ['succeeded']);
    const { items, sizes } = await allPages(`/api/v1/runs?sessionKey=${encodeURIComponent(sessionKey)}&limit=2`);
    assert.deepEqual(sizes, [2, 2, 1]);
    assert.deepEqual(
      items.map((r) => r.id),
      [...ids].reverse(),
    );
    const run = items[0]!;
    assert.deepEqual(
      Object.keys(run).sort(),
      [
        'agentId',
        'attempts',
        'createdAt',
        'error',
        'finishedAt',
        'hookName',
        'id',
        'label',
        'mappingId',
        'model',
        'name',
        'sessionKey',
        'startedAt',
        'state',
      ].sort(),
    );
    assert.deepEqual(
      [run.state, run.sessionKey, run.hookName, run.agentId, run.attempts],
      ['succeeded', sessionKey, 'agent', 'main', 1],
    );
    // A run is called by the request's name; an unnamed one by its hook.
    assert.deepEqual([run.label, run.name, run.mappingId], ['Pager', 'Pager', null]);
    const unnamed = await postAgent(hg, { message: 'no name', deliver: false, wakeMode: 'next-heartbeat' });
    assert.equal((await get(`/api/v1/runs/${unnamed}`)).label, 'agent');
    const succeeded = await get(`/api/v1/runs?state=succeeded&sessionKey=${encodeURIComponent(sessionKey)}&limit=200`);
    assert.equal(succeeded.items.length, 5);
    assert.deepEqual((await get(`/api/v1/runs?state=failed&sessionKey=${encodeURIComponent(sessionKey)}`)).items, []);

    // A delivered run: its detail has the message, the reply, its turns and its delivery.
    const delivered = await postAgent(hg, {
      message: uniq('deliver me'),
      name: 'Ops',
      channel: 'webhook',
      to: 'ops',
      wakeMode: 'next-heartbeat',
    });
    await waitRun(delivered, ['succeeded']);
    const detail = await waitFor(
      'the delivery to be sent',
      async () => {
        const d = await get(`/api/v1/runs/${delivered}`);
        return d.deliveries[0]?.state === 'sent' ? d : undefined;
      },
      15_000,
    );
    assert.match(detail.message, /deliver me/);
    assert.match(detail.reply, /^echo: /);
    assert.ok(
      detail.transcript.length >= 1 && detail.transcript.every((t: Record<string, unknown>) => t.runId === delivered),
    );
    assert.deepEqual(
      Object.keys(detail.deliveries[0]).filter((k) =>
        ['id', 'runId', 'channel', 'to', 'state', 'attempts', 'lastError', 'nextAttemptAt'].includes(k),
      ).length,
      8,
    );
    assert.deepEqual(
      [detail.deliveries[0].runId, detail.deliveries[0].channel, detail.deliveries[0].to],
      [delivered, 'webhook', 'ops'],
    );
  });

  it('retry of a failed run queues it again and it runs at once; a run that did not fail is 409 not_retryable', async () => {
    ai.setMode('unauthorized');
    const runId = await postAgent(hg, {
      message: uniq('will fail'),
      name: 'Flaky',
      model: 'local/gpt-main',
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    try {
      assert.equal(await waitRun(runId, ['failed', 'succeeded']), 'failed');
    } finally {
      ai.setMode('ok');
    }
    const failed = await get(`/api/v1/runs/${runId}`);
    assert.ok(failed.error, 'a failed run shows its error');
    assert.ok((await get('/api/v1/runs?state=failed')).items.some((r: Record<string, unknown>) => r.id === runId));
    const started = Date.now();
    const retry = await call(`/api/v1/runs/${runId}/retry`, { method: 'POST' });
    assert.deepEqual([retry.status, retry.body], [200, { ok: true, runId }]);
    assert.equal(await waitRun(runId, ['succeeded']), 'succeeded');
    // At once: not at the next poll of a quiet runtime.
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
    const again = await call(`/api/v1/runs/${runId}/retry`, { method: 'POST' });
    assert.deepEqual([again.status, again.body.code], [409, 'not_retryable']);
  });

  it('deliveries: a dead-lettered delivery is listed as failed and retried at once to sent; others are 409', async () => {
    receiver.script.push({ status: 500 }, { status: 500 });
    const metricsText = async () =>
      (await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
    const failedCount = (text: string) =>
      value(parseMetrics(text), 'hookgate_deliveries_total', { channel: 'webhook', outcome: 'failed' });
    const before = failedCount(await metricsText());
    const feed = await openSse(`${adminUrl}/api/v1/events?types=delivery`, { token: ADMIN_TOKEN });
    const runId = await postAgent(hg, {
      message: uniq('dead letter'),
      name: 'Dead',
      channel: 'webhook',
      to: 'ops',
      wakeMode: 'next-heartbeat',
    });
    try {
      // The live feed names the dead letter as the API does: a `failed` change to state `failed`.
      const retried = await feed.next((f) => f.data.runId === runId && f.data.change === 'retry', 20_000);
      assert.equal(retried.data.state, 'pending');
      const gaveUp = await feed.next((f) => f.data.runId === runId && f.data.change === 'failed', 20_000);
      assert.equal(gaveUp.data.state, 'failed');
    } finally {
      feed.close();
    }
    assert.equal(failedCount(await metricsText()) - before, 1, 'metrics: outcome="failed" counts the dead letter');
    const dead = await waitFor(
      'the delivery to be dead-lettered',
      async () => {
        const page = await get('/api/v1/deliveries?state=failed&channel=webhook');
        return page.items.find((d: Record<string, unknown>) => d.runId === runId);
      },
      20_000,
    );
    assert.deepEqual(
      [dead.state, dead.channel, dead.to, dead.attempts, dead.nextAttemptAt],
      ['failed', 'webhook', 'ops', 2, null],
    );
    assert.match(dead.lastError, /500/);
    // The older spelling is an alias of the same state, answered in the one vocabulary.
    const alias = await get('/api/v1/deliveries?state=dead&channel=webhook');
    assert.ok(alias.items.some((d: Record<string, unknown>) => d.id === dead.id && d.state === 'failed'));
    assert.ok(alias.items.every((d: Record<string, unknown>) => d.state === 'failed'));
    const retry = await call(`/api/v1/deliveries/${dead.id}/retry`, { method: 'POST' });
    assert.deepEqual([retry.status, retry.body], [200, { ok: true, deliveryId: dead.id }]);
    const sent = await waitFor(
      'the retried delivery to be sent',
      async () => {
        const d = (await get(`/api/v1/runs/${runId}`)).deliveries[0];
        return d.state === 'sent' ? d : undefined;
      },
      10_000,
    );
    assert.equal(sent.id, dead.id);
    const again = await call(`/api/v1/deliveries/${dead.id}/retry`, { method: 'POST' });
    assert.deepEqual([again.status, again.body.code], [409, 'not_retryable']);
    const sentList = await get('/api/v1/deliveries?state=sent&limit=200');
    assert.ok(sentList.items.some((d: Record<string, unknown>) => d.id === dead.id));
    assert.ok(sentList.items.every((d: Record<string, unknown>) => d.state === 'sent'));
  });

  it('overview: queue depths from the store and the failures of the last hour (a delivery dead-lettered now counts)', async () => {
    receiver.script.push({ status: 500 }, { status: 500 });
    const runId = await postAgent(hg, {
      message: uniq('overview dead letter'),
      name: 'Dead',
      channel: 'webhook',
      to: 'ops',
      wakeMode: 'next-heartbeat',
    });
    await waitFor(
      'the delivery to be dead-lettered',
      async () => {
        const page = await get('/api/v1/deliveries?state=failed&channel=webhook');
        return page.items.find((d: Record<string, unknown>) => d.runId === runId);
      },
      20_000,
    );
    await postWake(hg, uniq('overview wake'), 'next-heartbeat');
    const before = Date.now();
    const o = await get('/api/v1/overview');
    assert.ok(o.since <= before - 3_600_000 + 5_000 && o.since >= before - 3_600_000 - 60_000, `since ${o.since}`);
    // What waits, never the history: finished runs and dead deliveries are in `failures`, for the hour.
    assert.deepEqual(Object.keys(o.queues).sort(), ['outboxPending', 'runs', 'systemEventsPending']);
    assert.deepEqual(Object.keys(o.queues.runs).sort(), ['queued', 'running']);
    assert.ok(o.queues.systemEventsPending >= 1, 'the pending wake is counted');
    assert.equal(typeof o.queues.outboxPending, 'number', JSON.stringify(o.queues));
    assert.ok(o.failures.deliveriesDead >= 1, JSON.stringify(o.failures));
  });

  it('sessions: list, and one with its pending events, last route and recent turns', async () => {
    const text = uniq('pending wake');
    await postWake(hg, text, 'next-heartbeat');
    const list = await get('/api/v1/sessions?limit=200');
    const main = list.items.find((s: Record<string, unknown>) => s.key === 'main');
    assert.ok(main, 'the main session is listed');
    assert.ok(main.pendingEvents >= 1);
    const detail = await get('/api/v1/sessions/main');
    assert.ok(detail.pending.some((e: Record<string, unknown>) => e.text === text));
    assert.ok('lastRoute' in detail && 'transcript' in detail && Array.isArray(detail.recentRuns));
    const unknown = await call(`/api/v1/sessions/${encodeURIComponent('hook:nobody')}`);
    assert.deepEqual([unknown.status, unknown.body.code], [404, 'not_found']);
  });

  it('received: metadata only, filtered by outcome and path, paged without loss or repetition', async () => {
    const refused = await hg.post('/hooks/wake', { text: 'no' }, { authorization: 'Bearer wrong' });
    assert.equal(refused.status, 401);
    await postWake(hg, uniq('received'), 'next-heartbeat');
    // Refusals not stored yet come from memory (`live`), and are stored once their window ends: compare stored ones.
    const everything = (await get('/api/v1/received?limit=200')).items.filter((r: Record<string, unknown>) => !r.live);
    const { items } = await allPages('/api/v1/received?limit=3');
    assert.ok(items.length >= everything.length);
    assert.equal(new Set(items.map((r) => r.id)).size, items.length, 'a record repeated across pages');
    const ids = new Set(items.map((r) => r.id));
    assert.ok(
      everything.every((r: Record<string, unknown>) => ids.has(r.id)),
      'a record lost across pages',
    );
    const rec = everything.find((r: Record<string, unknown>) => r.status === 200)!;
    for (const k of ['at', 'path', 'clientIp', 'status', 'code', 'eventIds', 'runIds']) assert.ok(k in rec, `no ${k}`);
    assert.ok(!('payload' in rec) && !('text' in rec) && !('body' in rec), 'a received record holds metadata only');
    const accepted = (await get('/api/v1/received?outcome=accepted&limit=200')).items;
    assert.ok(accepted.length > 0 && accepted.every((r: Record<string, number>) => r.status! < 400));
    const wakes = (await get('/api/v1/received?path=wake&limit=200')).items;
    assert.ok(wakes.length > 0 && wakes.every((r: Record<string, unknown>) => r.path === 'wake'));
    // Listed at once, before its window of counts is stored: from memory, with its own time.
    const page = await get('/api/v1/received?outcome=rejected&limit=200');
    const rejected = page.items.find((r: Record<string, unknown>) => r.status === 401 && (r.live || r.count));
    assert.ok(rejected, JSON.stringify(page.items.slice(0, 3)));
    assert.equal(rejected.code, 'unauthorized');
  });

  it('breakdown: the last hour per minute, by path, by code, by channel and by hook, with refusals not stored yet', async () => {
    for (let i = 0; i < 3; i++)
      assert.equal((await hg.post('/hooks/agent', { message: 'no' }, { authorization: 'Bearer wrong' })).status, 401);
    await postWake(hg, uniq('breakdown'), 'next-heartbeat');
    const b = await get('/api/v1/breakdown');
    assert.equal(b.bucketMs, 60_000);
    assert.equal(b.buckets.length, 60);
    assert.equal(b.until - b.since, 3_600_000);
    assert.ok(b.buckets.at(-1).at <= Date.now() && b.until >= Date.now() - 1000, `${b.until}`);
    const refused = b.buckets.reduce((n: number, x: Record<string, any>) => n + (x.refused.unauthorized ?? 0), 0);
    const byCode = b.byCode.find((c: Record<string, unknown>) => c.code === 'unauthorized');
    assert.ok(
      byCode && byCode.status === 401 && byCode.count >= 3 && byCode.count === refused,
      JSON.stringify(b.byCode),
    );
    const agent = b.byPath.find((p: Record<string, unknown>) => p.path === 'agent');
    assert.ok(agent && agent.refused >= 3 && agent.codes.unauthorized >= 3, JSON.stringify(b.byPath));
    assert.ok(b.byPath.find((p: Record<string, any>) => p.path === 'wake')?.accepted >= 1);
    // The dead letter of the overview test (the order of the tests is the file's).
    assert.ok(
      b.byChannel.some((c: Record<string, any>) => c.channel === 'webhook' && c.failed >= 1 && !('dead' in c)),
      JSON.stringify(b.byChannel),
    );
    assert.ok(Array.isArray(b.runs));
    const bad = await call('/api/v1/breakdown?since=0');
    assert.deepEqual([bad.status, bad.body.code], [400, 'invalid_query']);
  });

  it('readyz is 503 naming the store once the store cannot write (last: the store is broken for good)', async () => {
    if (hg.storage.driver === 'postgres') {
      // The probe writes a row of `nodes` and removes it: without the table, the write fails.
      await hg.storage.db.query('ALTER TABLE nodes RENAME TO nodes_gone');
    } else {
      // The documented SQLite fault: the store file deleted under the running service (every write refused).
      rmSync(hg.storage.path, { force: true });
    }
    try {
      const r = await waitFor(
        'readyz 503',
        async () => {
          const a = await call('/readyz', { token: null });
          return a.status === 503 ? a : undefined;
        },
        10_000,
      );
      assert.equal(r.body.ok, false);
      assert.equal(r.body.checks.store.ok, false);
      assert.equal(typeof r.body.checks.store.error, 'string');
      assert.deepEqual([r.body.checks.ingress, r.body.checks.config], [{ ok: true }, { ok: true }]);
      const h = await call('/healthz', { token: null });
      assert.equal(h.status, 200, 'healthz stays 200 while the process serves');
    } finally {
      if (hg.storage.driver === 'postgres') await hg.storage.db.query('ALTER TABLE nodes_gone RENAME TO nodes');
    }
  });
});
