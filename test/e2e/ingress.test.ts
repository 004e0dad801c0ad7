/**
 * The hook listener (docs/reference.md#the-hook-listener) against the real server process, line by line.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import { storedEvents } from '../support/db.js';
import { type Hookgate, request, startHookgate, TOKEN } from '../support/server.js';
import { openServerStore } from '../support/runtime-kit.js';

const AUTH = { authorization: `Bearer ${TOKEN}` };

function openStore(hg: Hookgate): SqliteStore {
  return openServerStore(hg);
}

/** Raw HTTP over a socket: what fetch cannot do (lying Content-Length, slow bodies). Resolves with the status line and body. */
function raw(
  url: string,
  head: string,
  body?: string,
  opts: { keepOpenMs?: number } = {},
): Promise<{ status: number; text: string; closedBeforeBodySent?: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname);
    let data = '';
    sock.on('data', (d) => (data += d));
    sock.on('error', () => {});
    sock.on('close', () => {
      const m = /^HTTP\/1\.1 (\d+)/.exec(data);
      if (!m) return reject(new Error(`no HTTP answer: ${JSON.stringify(data)}`));
      resolve({ status: Number(m[1]), text: data.slice(data.indexOf('\r\n\r\n') + 4) });
    });
    sock.write(head);
    if (body) sock.write(body);
    if (opts.keepOpenMs) setTimeout(() => sock.end(), opts.keepOpenMs);
  });
}

describe('ingress (docs/reference.md#the-hook-listener)', () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate({
      config: {
        hooks: {
          maxBodyBytes: 1024,
          bodyTimeoutMs: 400,
          authFailureLimit: { maxFailures: 5, windowSeconds: 60, lockoutSeconds: 2 },
          idempotencyTtlSeconds: 2,
          refusals: { windowSeconds: 1 },
        },
        agents: {
          defaults: { models: { 'echo/echo': { alias: 'fast' }, 'echo/ack': {} } },
          list: [{ id: 'main', default: true }, { id: 'ops' }],
        },
        channels: {
          webhook: {
            targets: { ops: { url: 'http://127.0.0.1:9/x', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } },
          },
        },
      },
    });
  });
  after(() => hg.cleanup());

  describe('1. query token', () => {
    it('?token= is 400 query_token even with a valid header', async () => {
      const r = await request(`${hg.url}/hooks/wake?token=${TOKEN}`, {
        method: 'POST',
        headers: AUTH,
        body: '{"text":"x"}',
      });
      assert.equal(r.status, 400);
      assert.equal(r.body?.code, 'query_token');
      assert.equal(r.body?.ok, false);
      assert.match(String(r.body?.error), /Authorization: Bearer/);
    });
  });

  describe('2. method', () => {
    it('GET is 405 with Allow: POST', async () => {
      const r = await request(`${hg.url}/hooks/wake`, { method: 'GET', headers: AUTH });
      assert.equal(r.status, 405);
      assert.equal(r.headers.get('allow'), 'POST');
      assert.equal(r.body?.code, 'method_not_allowed');
    });
    it('non-POST requests with a wrong token do not count as auth failures', async () => {
      for (let i = 0; i < 8; i++) {
        const r = await request(`${hg.url}/hooks/wake`, {
          method: 'PUT',
          headers: { authorization: 'Bearer wrong', 'x-forwarded-for': '1.1.1.1' },
        });
        assert.equal(r.status, 405);
      }
      const ok = await hg.post('/hooks/wake', { text: 'after puts' });
      assert.equal(ok.status, 200);
    });
  });

  describe('3. credentials', () => {
    it('accepts Authorization: Bearer, x-hookgate-token and x-openclaw-token', async () => {
      assert.equal((await hg.post('/hooks/wake', { text: 'a1' })).status, 200);
      assert.equal(
        (await hg.post('/hooks/wake', { text: 'a2' }, { authorization: '', 'x-hookgate-token': TOKEN })).status,
        200,
      );
      assert.equal(
        (await hg.post('/hooks/wake', { text: 'a3' }, { authorization: '', 'x-openclaw-token': TOKEN })).status,
        200,
      );
      assert.equal((await hg.post('/hooks/wake', { text: 'a4' }, { authorization: `bearer ${TOKEN}` })).status, 200);
    });
    it('Bearer wins over the headers', async () => {
      const r = await hg.post(
        '/hooks/wake',
        { text: 'b' },
        { authorization: 'Bearer wrong-token', 'x-hookgate-token': TOKEN },
      );
      assert.equal(r.status, 401);
    });
    it('missing or wrong token is 401 unauthorized, nothing stored', async () => {
      const r1 = await hg.post('/hooks/wake', { text: 'never' }, { authorization: '' });
      const r2 = await hg.post('/hooks/wake', { text: 'never' }, { authorization: `Bearer ${TOKEN}x` });
      for (const r of [r1, r2]) {
        assert.equal(r.status, 401);
        assert.deepEqual(Object.keys(r.body ?? {}).sort(), ['code', 'error', 'ok']);
        assert.equal(r.body?.code, 'unauthorized');
      }
      assert.ok(![...storedEvents(join(hg.dir, 'data/hookgate.db')).values()].some((e) => e.text === 'never'));
    });
  });

  describe('3b. auth-failure limiter', () => {
    it('maxFailures failures lock the client: 429 with Retry-After until the lockout ends; success resets', async () => {
      // Own client address via a trusted-proxy-free server? The socket address is shared (127.0.0.1), so this test
      // uses its own server to stay independent of the others.
      const own = await startHookgate({
        config: { hooks: { authFailureLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 1 } } },
      });
      try {
        const bad = () => own.post('/hooks/wake', { text: 'x' }, { authorization: 'Bearer nope' });
        assert.equal((await bad()).status, 401);
        assert.equal((await bad()).status, 401);
        assert.equal((await bad()).status, 401); // third failure locks
        const locked = await bad();
        assert.equal(locked.status, 429);
        assert.equal(locked.body?.code, 'rate_limited');
        const ra = Number(locked.headers.get('retry-after'));
        assert.ok(ra >= 1, `Retry-After ${ra}`);
        // A valid token still works while locked, and resets the count.
        assert.equal((await own.post('/hooks/wake', { text: 'valid while locked' })).status, 200);
        await new Promise((r) => setTimeout(r, 1100));
        assert.equal((await bad()).status, 401);
        assert.equal((await bad()).status, 401);
        assert.equal((await own.post('/hooks/wake', { text: 'reset' })).status, 200);
        assert.equal((await bad()).status, 401, 'a success reset the failure count');
        assert.equal((await bad()).status, 401);
      } finally {
        await own.cleanup();
      }
    });
    it('behind a trusted proxy, clients are told apart by X-Forwarded-For', async () => {
      const own = await startHookgate({
        config: {
          gateway: { trustedProxies: ['127.0.0.1'] },
          hooks: { authFailureLimit: { maxFailures: 2, windowSeconds: 60, lockoutSeconds: 30 } },
        },
      });
      try {
        const bad = (ip: string) =>
          own.post('/hooks/wake', { text: 'x' }, { authorization: 'Bearer nope', 'x-forwarded-for': ip });
        await bad('203.0.113.7');
        await bad('203.0.113.7');
        assert.equal((await bad('203.0.113.7')).status, 429);
        assert.equal((await bad('198.51.100.1')).status, 401, 'another client is not locked');
        // A forged left-most hop does not escape the lock: the proxy appends the real address.
        assert.equal((await bad('10.9.9.9, 203.0.113.7')).status, 429);
      } finally {
        await own.cleanup();
      }
    });
  });

  describe('4. body', () => {
    it('Content-Length over maxBodyBytes is 413 before the body is read', async () => {
      const r = await raw(
        hg.url,
        `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 999999\r\n\r\n`,
        undefined,
        { keepOpenMs: 3000 },
      );
      assert.equal(r.status, 413);
      assert.match(r.text, /payload_too_large/);
    });
    it('a chunked body growing past the limit is 413 and the connection closes', async () => {
      const chunk = 'a'.repeat(600);
      const head = `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n`;
      const body = `${(600).toString(16)}\r\n${chunk}\r\n${(600).toString(16)}\r\n${chunk}\r\n`;
      const r = await raw(hg.url, head, body, { keepOpenMs: 3000 });
      assert.equal(r.status, 413);
    });
    it('a body not complete within bodyTimeoutMs is 408', async () => {
      const t0 = Date.now();
      const r = await raw(
        hg.url,
        `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 100\r\n\r\n`,
        '{"text":',
        { keepOpenMs: 3000 },
      );
      assert.equal(r.status, 408);
      assert.match(r.text, /body_timeout/);
      assert.ok(Date.now() - t0 >= 350);
    });
    it('invalid JSON is 400 invalid_json', async () => {
      const r = await hg.post('/hooks/wake', '{');
      assert.equal(r.status, 400);
      assert.equal(r.body?.code, 'invalid_json');
    });
    it('an empty body is {} (so wake says text is required)', async () => {
      const r = await hg.post('/hooks/wake', '');
      assert.equal(r.status, 400);
      assert.equal(r.body?.code, 'invalid_payload');
      assert.match(String(r.body?.error), /text required/);
    });
    it('a JSON value that is not an object is 400 invalid_payload', async () => {
      for (const b of ['[1]', '"text"', '42', 'null']) {
        const r = await hg.post('/hooks/wake', b);
        assert.equal(r.status, 400, b);
        assert.equal(r.body?.code, 'invalid_payload', b);
      }
    });
    it('Content-Type is not required', async () => {
      const r = await request(`${hg.url}/hooks/wake`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'text/plain' },
        body: '{"text":"plain"}',
      });
      assert.equal(r.status, 200);
    });
  });

  describe('5. route', () => {
    it('an unknown sub-path is 404 not_found after auth', async () => {
      assert.equal((await hg.post('/hooks/nope', {})).status, 404);
      assert.equal((await hg.post('/hooks/nope', {})).body?.code, 'not_found');
      assert.equal((await hg.post('/hooks', {})).status, 404);
      assert.equal((await hg.post('/hooks/nope', {}, { authorization: '' })).status, 401, 'auth comes before routing');
    });
    it('paths outside hooks.path are not claimed', async () => {
      const r = await hg.post('/other/wake', { text: 'x' });
      assert.equal(r.status, 404);
      assert.equal((await hg.post('/hookswake', { text: 'x' })).status, 404);
    });
    it('trailing slashes on the route are tolerated', async () => {
      assert.equal((await hg.post('/hooks/wake/', { text: 'slash' })).status, 200);
    });
  });

  describe('6. validation and policy', () => {
    const cases: Array<[string, string, Record<string, unknown>, string, RegExp?]> = [
      ['wake text missing', '/hooks/wake', {}, 'invalid_payload', /text required/],
      ['wake text blank', '/hooks/wake', { text: '   ' }, 'invalid_payload', /text required/],
      ['wake text not a string', '/hooks/wake', { text: 5 }, 'invalid_payload'],
      ['wake bad mode', '/hooks/wake', { text: 'x', mode: 'later' }, 'invalid_payload', /now.*next-heartbeat/],
      ['agent message missing', '/hooks/agent', {}, 'invalid_payload', /message required/],
      ['agent message blank', '/hooks/agent', { message: ' ' }, 'invalid_payload', /message required/],
      ['agent bad wakeMode', '/hooks/agent', { message: 'x', wakeMode: 'soon' }, 'invalid_payload'],
      ['agent deliver not boolean', '/hooks/agent', { message: 'x', deliver: 'false' }, 'invalid_payload', /deliver/],
      [
        'agent timeoutSeconds 0',
        '/hooks/agent',
        { message: 'x', timeoutSeconds: 0 },
        'invalid_payload',
        /timeoutSeconds/,
      ],
      ['agent timeoutSeconds string', '/hooks/agent', { message: 'x', timeoutSeconds: '5' }, 'invalid_payload'],
      [
        'agent unknown channel',
        '/hooks/agent',
        { message: 'x', channel: 'sms' },
        'invalid_channel',
        /last, log, webhook|last, webhook, log/,
      ],
      [
        'agent core channel not configured',
        '/hooks/agent',
        { message: 'x', channel: 'telegram' },
        'invalid_channel',
        /not configured/,
      ],
      ['agent unknown model provider', '/hooks/agent', { message: 'x', model: 'nope/m' }, 'model_not_allowed'],
      [
        'agent model outside allowlist',
        '/hooks/agent',
        { message: 'x', model: 'echo/other' },
        'model_not_allowed',
        /agents\.defaults\.models/,
      ],
      ['agent blank model', '/hooks/agent', { message: 'x', model: ' ' }, 'invalid_payload', /model/],
      [
        'agent sessionKey not enabled',
        '/hooks/agent',
        { message: 'x', sessionKey: 'hook:x' },
        'session_key_not_allowed',
        /allowRequestSessionKey/,
      ],
      ['agent sessionMode bad', '/hooks/agent', { message: 'x', sessionMode: 'forever' }, 'invalid_payload'],
      ['agent name not a string', '/hooks/agent', { message: 'x', name: 7 }, 'invalid_payload'],
      [
        'idempotency key too long',
        '/hooks/agent',
        { message: 'x', idempotencyKey: 'k'.repeat(257) },
        'invalid_payload',
        /256/,
      ],
    ];
    for (const [title, path, body, code, message] of cases) {
      it(`${title} → 400 ${code}`, async () => {
        const r = await hg.post(path, body);
        assert.equal(r.status, 400, JSON.stringify(r.body));
        assert.equal(r.body?.code, code);
        assert.equal(r.body?.ok, false);
        if (message) assert.match(String(r.body?.error), message);
      });
    }
    it('channel aliases, configured extension channels and last are accepted', async () => {
      for (const channel of ['last', 'LOG', 'webhook']) {
        const r = await hg.post('/hooks/agent', { message: 'x', channel, deliver: true });
        assert.equal(r.status, 200, `${channel}: ${JSON.stringify(r.body)}`);
      }
    });
    it('a model alias and an allowed ref are accepted and stored canonical', async () => {
      const r = await hg.post('/hooks/agent', { message: 'alias', model: 'fast' });
      assert.equal(r.status, 200);
      const store = openStore(hg);
      try {
        const run = await store.getRun(String(r.body?.runId));
        assert.equal(run?.model, 'echo/echo');
      } finally {
        await store.close();
      }
    });
    it('an unknown agentId is 400 invalid_agent naming the configured agents (as OpenClaw answers it), on /agent and /wake', async () => {
      const r0 = await hg.post('/hooks/agent', { message: 'who', agentId: 'missing-agent' });
      assert.equal(r0.status, 400);
      assert.equal(r0.body?.code, 'invalid_agent');
      assert.match(String(r0.body?.error), /unknown agentId "missing-agent"; the configured agents are: .*ops/);
      const w = await hg.post('/hooks/wake', { text: 'who', agentId: 'missing-agent' });
      assert.equal(w.status, 400);
      assert.equal(w.body?.code, 'invalid_agent');
      assert.equal((await hg.post('/hooks/wake', { text: 'who', agentId: 'ops' })).status, 200);
      const r = await hg.post('/hooks/agent', { message: 'who' });
      assert.equal(r.status, 200);
      const r2 = await hg.post('/hooks/agent', { message: 'who', agentId: 'OPS' });
      const store = openStore(hg);
      try {
        assert.equal((await store.getRun(String(r.body?.runId)))?.agentId, 'main');
        assert.equal((await store.getRun(String(r2.body?.runId)))?.agentId, 'ops');
      } finally {
        await store.close();
      }
    });
  });

  describe('7. durable commit before the answer, success bodies', () => {
    it('wake → 200 { ok, mode, eventId, eventOutcome } and the event is already stored', async () => {
      const r = await hg.post('/hooks/wake', { text: 'stored before answer', mode: 'next-heartbeat' });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body ?? {}).sort(), ['eventId', 'eventOutcome', 'mode', 'ok']);
      assert.equal(r.body?.mode, 'next-heartbeat');
      assert.equal(r.body?.eventOutcome, 'queued');
      const ev = storedEvents(join(hg.dir, 'data/hookgate.db')).get(String(r.body?.eventId));
      assert.equal(ev?.text, 'stored before answer');
      assert.equal(ev?.sessionKey, 'main');
    });
    it('a wake equal to the previous pending one is coalesced into it', async () => {
      const a = await hg.post('/hooks/wake', { text: 'same text twice', mode: 'next-heartbeat' });
      const b = await hg.post('/hooks/wake', { text: 'same text twice', mode: 'next-heartbeat' });
      assert.equal(a.body?.eventOutcome, 'queued');
      if (b.body?.eventOutcome === 'queued') {
        // Only allowed when a heartbeat (asked for by another test's request) consumed the first one in between.
        assert.notEqual(storedEvents(join(hg.dir, 'data/hookgate.db')).get(String(a.body?.eventId))?.consumedAt, null);
      } else {
        assert.equal(b.body?.eventOutcome, 'coalesced');
        assert.equal(b.body?.eventId, a.body?.eventId);
      }
    });
    it('agent → 200 { ok, runId } with the run stored and every field kept', async () => {
      const r = await hg.post('/hooks/agent', {
        message: '  Summarise the email  ',
        name: 'Email',
        wakeMode: 'next-heartbeat',
        deliver: false,
        channel: 'webhook',
        to: 'ops',
        thinking: 'low',
        timeoutSeconds: 42,
        sessionMode: 'isolated',
      });
      assert.equal(r.status, 200);
      assert.deepEqual(Object.keys(r.body ?? {}).sort(), ['ok', 'runId']);
      const store = openStore(hg);
      try {
        const run = await store.getRun(String(r.body?.runId));
        assert.ok(run);
        assert.ok(['queued', 'running', 'succeeded'].includes(run.state), run.state);
        assert.equal(run.message, 'Summarise the email');
        assert.equal(run.name, 'Email');
        assert.equal(run.wakeMode, 'next-heartbeat');
        assert.equal(run.deliver, false);
        assert.equal(run.channel, 'webhook');
        assert.equal(run.to, 'ops');
        assert.equal(run.thinking, 'low');
        assert.equal(run.timeoutSeconds, 42);
        // 'persistent' without a session key is refused: test/e2e/openclaw-fields.test.ts.
        assert.equal(run.sessionMode, 'isolated');
        assert.equal(run.contentSource, 'webhook');
        assert.match(run.sessionKey, /^hook:[0-9a-f-]{36}$/);
        assert.equal(run.agentId, 'main');
      } finally {
        await store.close();
      }
    });
    it('defaults: name Hook, wakeMode now, deliver true, channel last, agent timeout', async () => {
      const r = await hg.post('/hooks/agent', { message: 'defaults' });
      const store = openStore(hg);
      try {
        const run = await store.getRun(String(r.body?.runId));
        assert.equal(run?.name, 'Hook');
        assert.equal(run?.wakeMode, 'now');
        assert.equal(run?.deliver, true);
        assert.equal(run?.channel, 'last');
        assert.equal(run?.timeoutSeconds, 600);
        assert.equal(run?.sessionMode, 'isolated');
      } finally {
        await store.close();
      }
    });
    it('every received hook is recorded with metadata only', async () => {
      const r = await hg.post('/hooks/agent', { message: 'secret payload 12345' });
      const bad = await hg.post('/hooks/agent', { message: 'secret payload 12345' }, { authorization: 'Bearer bad' });
      assert.ok([401, 429].includes(bad.status), String(bad.status)); // 429 when earlier tests locked this address out
      const store = openStore(hg);
      try {
        // A refusal is counted, and its window (1 s here) stored once it ends: give it a moment.
        const refusalOf = async () =>
          (await store.listReceived(50, { rejected: true })).find(
            (x) => x.status === bad.status && x.path === 'agent' && x.at >= Date.now() - 5000,
          );
        let refusal = await refusalOf();
        for (let i = 0; i < 150 && !refusal; i++) {
          await new Promise((res) => setTimeout(res, 20));
          refusal = await refusalOf();
        }
        assert.ok(refusal, 'the refusal is counted');
        assert.equal(refusal.clientIp, '127.0.0.1');
        assert.ok(refusal.count! >= 1);
        const recs = [...(await store.listReceived(10)), refusal];
        const accepted = recs.find((x) => x.runIds.includes(String(r.body?.runId)));
        assert.ok(accepted);
        assert.equal(accepted.status, 200);
        assert.equal(accepted.path, 'agent');
        assert.equal(accepted.clientIp, '127.0.0.1');
        const dump = JSON.stringify(recs);
        assert.ok(!dump.includes('secret payload'), 'no payload in the record');
        assert.ok(!dump.includes(TOKEN), 'no token in the record');
      } finally {
        await store.close();
      }
    });
  });

  describe('idempotency', () => {
    it('a repeated key gets the same answer with duplicate: true and nothing new is queued', async () => {
      const body = { message: 'only once', name: 'Idem' };
      const a = await hg.post('/hooks/agent', body, { 'idempotency-key': 'delivery-1' });
      const b = await hg.post('/hooks/agent', body, { 'idempotency-key': 'delivery-1' });
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.equal(b.body?.runId, a.body?.runId);
      assert.equal(b.body?.duplicate, true);
      assert.equal(a.body?.duplicate, undefined);
      const store = openStore(hg);
      try {
        const runs = await store.listRuns({ limit: 500 });
        assert.equal(runs.filter((r) => r.message === 'only once').length, 1);
      } finally {
        await store.close();
      }
    });
    it('the key may come in the body; concurrent repeats collapse into one', async () => {
      const body = { text: 'idem wake concurrent', idempotencyKey: 'wake-key-7' };
      const answers = await Promise.all(Array.from({ length: 10 }, () => hg.post('/hooks/wake', body)));
      const ids = new Set(answers.map((a) => a.body?.eventId));
      assert.equal(ids.size, 1);
      assert.equal(answers.filter((a) => a.body?.duplicate === true).length, 9);
    });
    it('the same key with another body is 409 idempotency_conflict', async () => {
      await hg.post('/hooks/agent', { message: 'first' }, { 'idempotency-key': 'k-conflict' });
      const r = await hg.post('/hooks/agent', { message: 'second' }, { 'idempotency-key': 'k-conflict' });
      assert.equal(r.status, 409);
      assert.equal(r.body?.code, 'idempotency_conflict');
    });
    it('keys are scoped per path, and expire after idempotencyTtlSeconds', async () => {
      const a = await hg.post('/hooks/wake', { text: 'ttl test A' }, { 'idempotency-key': 'ttl' });
      const other = await hg.post('/hooks/agent', { message: 'ttl test A' }, { 'idempotency-key': 'ttl' });
      assert.equal(other.status, 200);
      assert.equal(other.body?.duplicate, undefined);
      await new Promise((r) => setTimeout(r, 2100));
      await hg.post('/hooks/wake', { text: 'something in between' });
      const b = await hg.post('/hooks/wake', { text: 'ttl test A' }, { 'idempotency-key': 'ttl' });
      assert.equal(b.body?.duplicate, undefined);
      assert.notEqual(b.body?.eventId, a.body?.eventId);
    });
  });

  it('a 202 status can be configured for agent runs', async () => {
    const own = await startHookgate({ config: { hooks: { agentAcceptedStatus: 202 } } });
    try {
      const r = await own.post('/hooks/agent', { message: 'x' });
      assert.equal(r.status, 202);
      assert.equal(typeof r.body?.runId, 'string');
      assert.equal((await own.post('/hooks/wake', { text: 'x' })).status, 200);
    } finally {
      await own.cleanup();
    }
  });

  it('keep-alive connections serve many requests', async () => {
    const agent = new (await import('node:http')).Agent({ keepAlive: true, maxSockets: 1 });
    const send = () =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${hg.url}/hooks/wake`, { method: 'POST', agent, headers: AUTH }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ text: `ka ${Math.random()}` }));
      });
    for (let i = 0; i < 5; i++) assert.equal(await send(), 200);
    agent.destroy();
  });
});
