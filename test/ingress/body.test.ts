import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpError } from '../../src/errors.js';
import { parseFormObject } from '../../src/form-body.js';
import { parseJsonObject, readBody } from '../../src/ingress/body.js';
import { sendError, sendJson } from '../../src/ingress/respond.js';
import { waitFor } from '../support/wait.js';

const MAX = 1024;
const TIMEOUT_MS = 400;

/** What the server saw of one request, for assertions from the server's side. */
interface Seen {
  outcome?: { ok: true; size: number } | { ok: false; status: number; code: string };
  settledAt?: number;
  /** Listeners and flow state of the request right after readBody settled. */
  dataListeners?: number;
  paused?: boolean;
  /** Body bytes read off the socket by the time the socket closed. */
  bytesReadAtClose?: number;
  closed: Promise<void>;
}

const seen: Seen[] = [];
let server: Server;
let port: number;

/** readBody's one call of its callback, as a promise. */
function bodyOf(req: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    readBody(req, maxBytes, timeoutMs, undefined, (err, body) => (err ? reject(err) : resolve(body!))),
  );
}

function handle(req: IncomingMessage, res: import('node:http').ServerResponse): void {
  let markClosed!: () => void;
  const s: Seen = { closed: new Promise((r) => (markClosed = r)) };
  seen.push(s);
  const socket = req.socket;
  socket.once('close', () => {
    s.bytesReadAtClose = socket.bytesRead;
    markClosed();
  });
  bodyOf(req, MAX, TIMEOUT_MS).then(
    (body) => {
      s.settledAt = Date.now();
      s.outcome = { ok: true, size: body.length };
      try {
        sendJson(res, 200, { ok: true, payload: parseJsonObject(body) });
      } catch (err) {
        sendError(res, err as HttpError);
      }
    },
    (err: HttpError) => {
      s.settledAt = Date.now();
      s.outcome = { ok: false, status: err.status, code: err.code };
      s.dataListeners = req.listenerCount('data');
      s.paused = req.isPaused();
      if (!res.destroyed) sendError(res, err, { connection: 'close' });
    },
  );
}

before(async () => {
  server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  at: number;
}

/** A raw HTTP/1.1 client: the test controls every byte and every pause. */
class RawClient {
  readonly socket: Socket;
  private buf = Buffer.alloc(0);
  readonly response: Promise<RawResponse>;
  readonly ended: Promise<void>;

  constructor() {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('error', () => {}); // EPIPE / ECONNRESET once the server closed: expected in these tests
    this.ended = new Promise((r) => this.socket.once('close', () => r()));
    this.response = new Promise((resolve, reject) => {
      this.socket.on('data', (chunk: Buffer) => {
        this.buf = Buffer.concat([this.buf, chunk]);
        const head = this.buf.indexOf('\r\n\r\n');
        if (head < 0) return;
        const lines = this.buf.subarray(0, head).toString('latin1').split('\r\n');
        const status = Number(lines[0]?.split(' ')[1]);
        const headers: Record<string, string> = {};
        for (const l of lines.slice(1)) {
          const i = l.indexOf(':');
          headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
        }
        const len = Number(headers['content-length'] ?? 0);
        const body = this.buf.subarray(head + 4);
        if (body.length < len) return;
        resolve({
          status,
          headers,
          body: len ? (JSON.parse(body.subarray(0, len).toString('utf8')) as Record<string, unknown>) : {},
          at: Date.now(),
        });
      });
      this.socket.once('close', () => reject(new Error('connection closed before a complete response')));
    });
    this.response.catch(() => {});
  }

  async ready(): Promise<void> {
    if (this.socket.connecting) await new Promise((r) => this.socket.once('connect', r));
  }

  write(data: string | Buffer): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(data);
  }

  head(headers: Record<string, string | number>): void {
    const lines = [
      'POST /hooks/wake HTTP/1.1',
      'Host: 127.0.0.1',
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    ];
    this.write(`${lines.join('\r\n')}\r\n\r\n`);
  }

  close(): void {
    this.socket.destroy();
  }
}

async function post(body: string | Buffer, extra: Record<string, string | number> = {}): Promise<RawResponse> {
  const c = new RawClient();
  await c.ready();
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  c.head({ 'Content-Type': 'application/json', 'Content-Length': b.length, Connection: 'close', ...extra });
  c.write(b);
  try {
    return await c.response;
  } finally {
    c.close();
  }
}

function lastSeen(): Seen {
  const s = seen.at(-1);
  assert.ok(s, 'the server saw no request');
  return s;
}

describe('readBody over a real socket', { timeout: 30_000 }, () => {
  it('reads a complete body and parses the JSON object', async () => {
    const r = await post('{"text":"hello","n":1}');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.payload, { text: 'hello', n: 1 });
  });

  it('accepts a body of exactly maxBodyBytes', async () => {
    const body = JSON.stringify({ text: 'x'.repeat(MAX - 11) });
    assert.equal(Buffer.byteLength(body), MAX);
    const r = await post(body);
    assert.equal(r.status, 200);
  });

  it('answers 413 on a Content-Length over the limit before a byte of body is sent', async () => {
    const c = new RawClient();
    await c.ready();
    c.head({ 'Content-Length': 10_000_000 });
    const r = await c.response; // no body written at all
    assert.equal(r.status, 413);
    assert.deepEqual(r.body, { ok: false, error: `request body exceeds ${MAX} bytes`, code: 'payload_too_large' });
    assert.equal(r.headers.connection, 'close');
    assert.deepEqual(lastSeen().outcome, { ok: false, status: 413, code: 'payload_too_large' });
    await c.ended; // the server closes the connection
    c.close();
  });

  it('answers 413 on Content-Length of limit + 1', async () => {
    const r = await post('x'.repeat(MAX + 1));
    assert.equal(r.status, 413);
    assert.equal(r.body.code, 'payload_too_large');
  });

  it('answers 413 as soon as a chunked body grows past the limit, and stops buffering', async () => {
    const c = new RawClient();
    await c.ready();
    c.head({ 'Transfer-Encoding': 'chunked' });
    const chunk = Buffer.alloc(256, 0x61);
    let sent = 0;
    let responded = false;
    void c.response.then(
      () => (responded = true),
      () => {},
    );
    // Feed 256-byte chunks until the body is past the limit, then wait: the 413 must come without another byte (a
    // server that waited for more would answer 408 at the body timeout). Writing on after the answer could make the
    // closed server's kernel reset the connection before a busy client has read the answer.
    for (let i = 0; i < 100 && !responded && sent <= MAX; i++) {
      c.write(`${chunk.length.toString(16)}\r\n`);
      c.write(chunk);
      c.write('\r\n');
      sent += chunk.length;
      await sleep(10);
    }
    const r = await c.response;
    assert.equal(r.status, 413);
    assert.equal(r.body.code, 'payload_too_large');
    assert.ok(sent <= MAX + 4 * 256, `413 came only after ${sent} bytes`);
    const s = lastSeen();
    assert.deepEqual(s.outcome, { ok: false, status: 413, code: 'payload_too_large' });
    assert.equal(s.dataListeners, 0, 'readBody still listens for data after rejecting');
    assert.equal(s.paused, true, 'the request was not paused after the 413');

    // The client ignores the answer and keeps sending 4 MB: the server neither reads nor keeps it.
    const big = Buffer.alloc(64 * 1024, 0x62);
    for (let i = 0; i < 64 && !c.socket.destroyed; i++) {
      c.write(`${big.length.toString(16)}\r\n`);
      c.write(big);
      c.write('\r\n');
    }
    await Promise.race([s.closed, sleep(3000).then(() => assert.fail('the server kept the connection open'))]);
    assert.ok((s.bytesReadAtClose ?? Infinity) < 2 * 1024 * 1024, `the server read ${s.bytesReadAtClose} bytes`);
    c.close();
  });

  it('answers 408 when the body does not complete within the timeout', async () => {
    const c = new RawClient();
    await c.ready();
    const start = Date.now();
    c.head({ 'Content-Length': 100 });
    c.write('{"text":'); // and then nothing
    const r = await c.response;
    const elapsed = r.at - start;
    assert.equal(r.status, 408);
    assert.equal(r.body.code, 'body_timeout');
    assert.ok(elapsed >= TIMEOUT_MS - 20, `408 after ${elapsed} ms, before the ${TIMEOUT_MS} ms timeout`);
    assert.ok(elapsed < TIMEOUT_MS + 1500, `408 only after ${elapsed} ms`);
    c.close();
  });

  it('bounds the whole body in time, not only the gaps between bytes (slowloris)', async () => {
    const c = new RawClient();
    await c.ready();
    const start = Date.now();
    c.head({ 'Content-Length': 1000 });
    let timer: NodeJS.Timeout | undefined;
    const drip = () => {
      c.write('a');
      timer = setTimeout(drip, 20);
    };
    drip();
    try {
      const r = await c.response;
      assert.equal(r.status, 408);
      assert.ok(r.at - start < TIMEOUT_MS + 1500);
    } finally {
      clearTimeout(timer);
      c.close();
    }
  });

  it('rejects when the client aborts mid-body', async () => {
    const before = seen.length;
    const c = new RawClient();
    await c.ready();
    c.head({ 'Content-Length': 100 });
    c.write('{"text":"half');
    await waitFor('the server to see the request', () => seen.length > before);
    const s = lastSeen();
    const start = Date.now();
    c.close();
    await waitFor('the read to settle', () => s.outcome !== undefined);
    assert.deepEqual(s.outcome, { ok: false, status: 400, code: 'body_aborted' });
    assert.ok((s.settledAt ?? Infinity) - start < TIMEOUT_MS, 'the abort was only noticed by the timeout');
  });

  it('treats an empty body as {} (Content-Length: 0, or no body at all)', async () => {
    const r = await post('');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.payload, {});
    const c = new RawClient();
    await c.ready();
    c.head({ 'Transfer-Encoding': 'chunked', Connection: 'close' });
    c.write('0\r\n\r\n');
    const r2 = await c.response;
    c.close();
    assert.equal(r2.status, 200);
    assert.deepEqual(r2.body.payload, {});
  });

  it('treats a whitespace-only body as {}', async () => {
    const r = await post(' \r\n\t  ');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.payload, {});
  });

  it('answers invalid JSON with 400 invalid_json and a non-object with 400 invalid_payload', async () => {
    const bad = await post('{"text":');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_json');
    const arr = await post('[1,2]');
    assert.equal(arr.status, 400);
    assert.equal(arr.body.code, 'invalid_payload');
  });
});

describe('parseJsonObject', () => {
  const code = (body: string) => {
    try {
      parseJsonObject(Buffer.from(body));
      return 'ok';
    } catch (err) {
      assert.ok(err instanceof HttpError);
      assert.equal(err.status, 400);
      return err.code;
    }
  };

  it('parses objects', () => {
    assert.deepEqual(parseJsonObject(Buffer.from('{"a":{"b":[1,null,"c"]}}')), { a: { b: [1, null, 'c'] } });
    assert.deepEqual(parseJsonObject(Buffer.from(' \n {"a":1} \n')), { a: 1 });
    assert.deepEqual(parseJsonObject(Buffer.from('{"text":"héllo ✓"}')), { text: 'héllo ✓' });
  });

  it('maps empty and whitespace-only bodies to {}', () => {
    assert.deepEqual(parseJsonObject(Buffer.alloc(0)), {});
    assert.deepEqual(parseJsonObject(Buffer.from('   ')), {});
    assert.deepEqual(parseJsonObject(Buffer.from('\r\n\t ')), {});
  });

  it('answers invalid JSON with invalid_json', () => {
    for (const b of ['{', '{"a":}', "{'a':1}", 'hello', '{"a":1}}', '\u0000']) assert.equal(code(b), 'invalid_json', b);
  });

  it('answers JSON that is not an object with invalid_payload', () => {
    for (const b of ['[]', '[{"a":1}]', '"text"', 'null', '42', '-1.5', 'true', 'false'])
      assert.equal(code(b), 'invalid_payload', b);
  });

  it('does not let __proto__ in the body change the prototype', () => {
    const p = parseJsonObject(Buffer.from('{"__proto__":{"polluted":true},"text":"x"}'));
    assert.equal(Object.getPrototypeOf(p), Object.prototype);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});

describe('discardBody: the rest of a refused body is read and dropped, within bounds', async () => {
  const { discardBody } = await import('../../src/ingress/body.js');
  const results: boolean[] = [];
  const limits = { maxBytes: 64 * 1024, maxMs: 300 };
  const srv = createServer((req, res) => {
    void discardBody(req, limits).then((complete) => {
      results.push(complete);
      res.end();
    });
  });
  before(() => new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r())));
  after(() => new Promise<void>((r) => srv.close(() => r())));
  const send = (bytes: number, stall = false) =>
    new Promise<void>((resolve) => {
      const socket: Socket = connect((srv.address() as AddressInfo).port, '127.0.0.1', () => {
        socket.write(`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${bytes + (stall ? 1 : 0)}\r\n\r\n`);
        socket.write(Buffer.alloc(bytes, 0x61));
      });
      socket.on('error', () => {});
      socket.on('close', () => resolve());
      socket.on('data', () => socket.end());
    });

  it('a body within maxBytes is read to its end', async () => {
    await send(32 * 1024);
    assert.equal(results.pop(), true);
  });
  it('a body past maxBytes is given up on', async () => {
    await send(256 * 1024);
    assert.equal(results.pop(), false);
  });
  it('a body that stalls is given up on after maxMs', async () => {
    const started = Date.now();
    await send(1024, true);
    assert.equal(results.pop(), false);
    assert.ok(Date.now() - started >= limits.maxMs - 20, `gave up after ${Date.now() - started} ms`);
  });
});

describe('form bodies (signed mappings: Slack slash commands and Interactivity)', () => {
  it('a slash command body becomes one string per field', () => {
    const body = Buffer.from(
      'token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&team_domain=example&channel_id=C2147483705&channel_name=test' +
        '&user_id=U2147483697&user_name=Steve&command=%2Fweather&text=94070+and+more&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F1234%2F5678',
    );
    assert.deepEqual(parseFormObject(body), {
      token: 'gIkuvaNzQIHg97ATvDxqgjtO',
      team_id: 'T0001',
      team_domain: 'example',
      channel_id: 'C2147483705',
      channel_name: 'test',
      user_id: 'U2147483697',
      user_name: 'Steve',
      command: '/weather',
      text: '94070 and more',
      response_url: 'https://hooks.slack.com/commands/1234/5678',
    });
  });

  it('Interactivity: a payload field holding JSON is decoded; a payload that is not JSON stays a string', () => {
    const json = { type: 'block_actions', user: { id: 'U1', name: 'ada' }, actions: [{ action_id: 'approve' }] };
    assert.deepEqual(parseFormObject(Buffer.from(`payload=${encodeURIComponent(JSON.stringify(json))}`)), {
      payload: json,
    });
    assert.deepEqual(parseFormObject(Buffer.from('payload=%7Bnot+json')), { payload: '{not json' });
    assert.deepEqual(parseFormObject(Buffer.from('payload=42')), { payload: '42' });
  });

  it('a repeated field keeps every value in order; prototype keys are dropped', () => {
    const out = parseFormObject(Buffer.from('a=1&a=2&a=3&b=x&__proto__=evil&constructor=c&prototype=p'));
    assert.deepEqual(out, { a: ['1', '2', '3'], b: 'x' });
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.equal(Object.hasOwn(out, '__proto__'), false);
    assert.deepEqual(parseFormObject(Buffer.alloc(0)), {});
  });
});

describe('readBody: deadlines of concurrent bodies', () => {
  /** A request that never sends its body (the listeners readBody adds are all it needs). */
  const silent = () => Object.assign(new EventEmitter(), { headers: {}, pause() {} }) as unknown as IncomingMessage;

  it('each body times out on its own timeout, never before it; one that ends meanwhile leaves the others', async () => {
    const start = performance.now();
    const settled: Array<{ timeoutMs: number; at: number; code: string }> = [];
    const read = (timeoutMs: number, req = silent()) =>
      bodyOf(req, MAX, timeoutMs).then(
        () => settled.push({ timeoutMs, at: performance.now() - start, code: 'ok' }),
        (err: HttpError) => settled.push({ timeoutMs, at: performance.now() - start, code: err.code }),
      );
    const ending = silent();
    // Started in this order, so the one that ends sits between others in the sweep's list.
    const reads = [read(60), read(250), read(150, ending), read(120)];
    ending.emit('data', Buffer.from('{}'));
    ending.emit('end');
    await Promise.all(reads);
    settled.sort((a, b) => a.timeoutMs - b.timeoutMs);
    assert.deepEqual(
      settled.map((s) => [s.timeoutMs, s.code]),
      [
        [60, 'body_timeout'],
        [120, 'body_timeout'],
        [150, 'ok'],
        [250, 'body_timeout'],
      ],
    );
    for (const s of settled.filter((s) => s.code === 'body_timeout')) {
      assert.ok(s.at >= s.timeoutMs, `${s.timeoutMs} ms timed out after ${s.at.toFixed(1)} ms`);
      // Two sweeps late at most on an idle loop; the margin is for a busy machine.
      assert.ok(s.at < s.timeoutMs + 2000, `${s.timeoutMs} ms timed out only after ${s.at.toFixed(1)} ms`);
    }
  });
});
