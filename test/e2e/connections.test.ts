/**
 * The connection level against the real process, over raw sockets from distinct loopback addresses (127.0.0.x, each
 * a client of its own): header time answered 408, the per-address and total connection caps and their fairness
 * (docs/security.md, "Connection fairness"), `Expect: 100-continue` answered only after the token or lockout check,
 * and a locked-out client refused on a signed path before its body is read.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fairnessProbe, loopbackAddresses } from '../support/conn-fairness.js';
import { type Hookgate, startHookgate, TOKEN } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const GITHUB_SECRET = 'github-secret-for-connection-tests';

/** A raw client connection that collects what the server writes. */
class Conn {
  data = '';
  closed = false;
  private waiters: Array<() => void> = [];

  private constructor(readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      this.data += d;
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => {});
  }

  static open(url: string, localAddress: string): Promise<Conn> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = netConnect({ host: hostname, port: Number(port), localAddress }, () => resolve(new Conn(socket)));
      socket.once('error', reject);
    });
  }

  write(text: string | Buffer): void {
    this.socket.write(text);
  }

  /** Resolves once `pred` holds; rejects after `ms` with what was seen. */
  until(pred: (c: Conn) => boolean, ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `timed out after ${ms} ms; got ${JSON.stringify(this.data.slice(0, 200))}, closed=${this.closed}`,
            ),
          ),
        ms,
      );
      const check = () => {
        if (!pred(this)) return void this.waiters.push(check);
        clearTimeout(timer);
        resolve();
      };
      check();
    });
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}

/** A whole POST from `localAddress` (a fresh connection): the status. */
function post(
  url: string,
  localAddress: string,
  path: string,
  body: string,
  headers: Record<string, string>,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}${path}`,
      { method: 'POST', localAddress, agent: false, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const head = (path: string, headers: Record<string, string | number>) =>
  `POST ${path} HTTP/1.1\r\nhost: hookgate\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
const githubSig = (body: string | Buffer, secret = GITHUB_SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
const WAKE = JSON.stringify({ text: 'hello' });
const statusOf = (c: Conn) => /^HTTP\/1\.1 (\d{3})/.exec(c.data)?.[1];

describe('connection limits (real process)', () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate({
      config: {
        gateway: { limits: { headersTimeoutMs: 10_000, maxConnections: 12, maxConnectionsPerAddress: 4 } },
        hooks: {
          authFailureLimit: { maxFailures: 2, windowSeconds: 60, lockoutSeconds: 60 },
          mappings: [
            {
              id: 'github',
              match: { path: 'github' },
              messageTemplate: 'PR {{action}}',
              signature: { scheme: 'github', secret: GITHUB_SECRET },
            },
          ],
        },
      },
    });
  });
  after(async () => {
    await hg.cleanup();
  });

  it('holds the per-address cap: a connection over it replaces the oldest idle one, closed unanswered; another address is still served', async () => {
    const conns = await Promise.all(Array.from({ length: 20 }, () => Conn.open(hg.url, '127.0.0.4')));
    try {
      await new Promise((r) => setTimeout(r, 300));
      const open = conns.filter((c) => !c.closed);
      assert.equal(open.length, 4, 'exactly maxConnectionsPerAddress stay open');
      assert.ok(
        conns.filter((c) => c.closed).every((c) => c.data === ''),
        'refused connections get no bytes',
      );
      // A legitimate client from another address is served while they are held.
      assert.equal(await post(hg.url, '127.0.0.5', '/hooks/wake', WAKE, { authorization: `Bearer ${TOKEN}` }), 200);
      // The four admitted ones are real connections: one of them is served too.
      const c = open[0]!;
      c.write(
        head('/hooks/wake', {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'content-length': WAKE.length,
        }) + WAKE,
      );
      await c.until((x) => statusOf(x) !== undefined, 5000);
      assert.equal(statusOf(c), '200');
      // One closed, one more from the same address is admitted.
      open[1]!.destroy();
      await new Promise((r) => setTimeout(r, 100));
      const again = await Conn.open(hg.url, '127.0.0.4');
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(again.closed, false);
      again.destroy();
    } finally {
      for (const c of conns) c.destroy();
    }
  });

  it('at the total cap a fresh address gets in: idle connections of the largest holders give way, a busy one is answered', async () => {
    const conns: Conn[] = [];
    try {
      // A request in progress: its headers are in, its body is not complete yet.
      const busy = await Conn.open(hg.url, '127.0.0.6');
      busy.write(
        head('/hooks/wake', {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'content-length': WAKE.length,
        }) + WAKE.slice(0, 5),
      );
      for (const a of ['127.0.0.6', '127.0.0.7', '127.0.0.8'])
        for (let i = 0; i < 4; i++) conns.push(await Conn.open(hg.url, a));
      for (let i = 0; i < 5; i++)
        assert.equal(
          await post(hg.url, '127.0.0.9', '/hooks/wake', WAKE, { authorization: `Bearer ${TOKEN}` }),
          200,
          `attempt ${i + 1}`,
        );
      await waitFor('the listener back under its cap of 12', () => conns.filter((c) => !c.closed).length + 1 <= 12);
      assert.ok(
        conns.filter((c) => c.closed).every((c) => c.data === ''),
        'a connection closed to make room gets no bytes',
      );
      // The busy one was never chosen: its request is answered.
      assert.equal(busy.closed, false);
      busy.write(WAKE.slice(5));
      await busy.until((c) => statusOf(c) !== undefined, 5000);
      assert.equal(statusOf(busy), '200');
      busy.destroy();
    } finally {
      for (const c of conns) c.destroy();
    }
  });

  it('Expect: 100-continue is answered only after the token check: a wrong token gets 401 and no invitation', async () => {
    const wrong = await Conn.open(hg.url, '127.0.0.10');
    wrong.write(
      head('/hooks/wake', {
        authorization: 'Bearer wrong',
        'content-type': 'application/json',
        'content-length': WAKE.length,
        expect: '100-continue',
      }),
    );
    await wrong.until((c) => statusOf(c) !== undefined && c.closed, 3000);
    assert.equal(statusOf(wrong), '401');
    assert.ok(!wrong.data.includes('100 Continue'), wrong.data);

    const right = await Conn.open(hg.url, '127.0.0.10');
    right.write(
      head('/hooks/wake', {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'content-length': WAKE.length,
        expect: '100-continue',
      }),
    );
    await right.until((c) => c.data.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), 3000);
    right.write(WAKE);
    await right.until((c) => /HTTP\/1\.1 200/.test(c.data), 3000);
    right.destroy();
  });

  it('on a signed path a forgery is invited (the signature needs the body), then 401; a locked-out client is refused before its body', async () => {
    const big = JSON.stringify({ action: 'opened', pad: 'x'.repeat(240 * 1024) });
    for (let i = 0; i < 2; i++) {
      const c = await Conn.open(hg.url, '127.0.0.11');
      c.write(
        head('/hooks/github', {
          'content-type': 'application/json',
          'content-length': big.length,
          'x-hub-signature-256': githubSig(big, 'forged'),
          expect: '100-continue',
        }),
      );
      await c.until((x) => x.data.startsWith('HTTP/1.1 100 Continue\r\n\r\n'), 3000);
      c.write(big);
      await c.until((x) => /HTTP\/1\.1 401/.test(x.data), 3000);
      c.destroy();
    }
    // Locked out now: with Expect, 429 and no invitation.
    const expecting = await Conn.open(hg.url, '127.0.0.11');
    expecting.write(
      head('/hooks/github', {
        'content-type': 'application/json',
        'content-length': big.length,
        'x-hub-signature-256': githubSig(big),
        expect: '100-continue',
      }),
    );
    await expecting.until((c) => statusOf(c) !== undefined && c.closed, 3000);
    assert.equal(statusOf(expecting), '429');
    assert.ok(!expecting.data.includes('100 Continue'));
    // Without Expect: the headers alone get the 429 (no byte of the announced 240 KB sent), and the connection closes.
    const plain = await Conn.open(hg.url, '127.0.0.11');
    plain.write(
      head('/hooks/github', {
        'content-type': 'application/json',
        'content-length': big.length,
        'x-hub-signature-256': githubSig(big, 'forged'),
      }),
    );
    await plain.until((c) => statusOf(c) !== undefined && c.closed, 3000);
    assert.equal(statusOf(plain), '429');
    assert.match(plain.data, /\r\nretry-after: \d+\r\n/i);
    assert.match(plain.data, /\r\nconnection: close\r\n/i);
    // Another address with a verified delivery is accepted.
    assert.equal(
      await post(hg.url, '127.0.0.12', '/hooks/github', big, {
        'x-hub-signature-256': githubSig(big),
        'x-github-event': 'pull_request',
      }),
      200,
    );
  });
});

describe('header time (real process)', () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate({ config: { gateway: { limits: { headersTimeoutMs: 500, requestTimeoutMs: 5000 } } } });
  });
  after(async () => {
    await hg.cleanup();
  });

  it('a client that never finishes its headers (slowloris) is answered 408 and closed after the header time', async () => {
    const c = await Conn.open(hg.url, '127.0.0.13');
    const started = Date.now();
    c.write('POST /hooks/wake HTTP/1.1\r\nhost: hookgate\r\n');
    const drip = setInterval(() => c.write(`x-drip-${Date.now()}: 1\r\n`), 100);
    try {
      await c.until((x) => x.closed, 4000);
    } finally {
      clearInterval(drip);
    }
    assert.equal(statusOf(c), '408', c.data);
    assert.match(c.data, /"code":"request_timeout"/);
    const took = Date.now() - started;
    assert.ok(took >= 450 && took < 2500, `closed after ${took} ms`);
    // A prompt client is served meanwhile and after.
    assert.equal(await post(hg.url, '127.0.0.14', '/hooks/wake', WAKE, { authorization: `Bearer ${TOKEN}` }), 200);
  });
});

describe('connection fairness (real process, default limits: 512 in all, 64 per address)', { timeout: 120_000 }, () => {
  const ADMIN_TOKEN = 'admin-token-for-fairness-0123456789';
  /** Each answer of the fresh client within this (typically a few ms; generous for a busy machine). */
  const BOUND_MS = 3000;
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate({ config: { admin: { enabled: true, port: 0, token: ADMIN_TOKEN } } });
  });
  after(async () => {
    await hg.cleanup();
  });

  for (const [n, perAddress] of [
    [12, 50],
    [20, 64],
  ] as const) {
    it(`${n} addresses holding ${perAddress} idle or half-sent connections each (and reconnecting): a fresh address gets 5 of 5 answers`, async () => {
      const r = await fairnessProbe({
        url: hg.url,
        token: TOKEN,
        addresses: loopbackAddresses(10, n),
        perAddress,
        client: '127.0.0.50',
        requests: 5,
        timeoutMs: BOUND_MS,
      });
      assert.equal(r.answered, 5, JSON.stringify(r.outcomes));
      assert.ok(r.maxMs < BOUND_MS, `slowest answer ${r.maxMs} ms`);
    });
  }

  it('evictions are counted in the metrics and logged rate-limited', async () => {
    const listening = await hg.waitForLog((l) => l.msg === 'hookgate listening');
    const text = await fetch(`${listening.adminUrl as string}/metrics`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    }).then((r) => r.text());
    const evicted = [
      ...text.matchAll(/^hookgate_connections_evicted_total\{[^}]*listener="hooks"[^}]*\} (\d+)/gm),
    ].reduce((n, m) => n + Number(m[1]), 0);
    assert.ok(
      evicted > 0,
      text
        .split('\n')
        .filter((l) => l.includes('connections_'))
        .join('\n'),
    );
    const lines = hg.logs.filter((l) => l.code === 'connection_evicted');
    assert.ok(lines.length >= 1 && lines.length <= 3, `${lines.length} eviction lines for ${evicted} evictions`);
    assert.equal(lines[0]!.listener, 'hooks');
  });
});
