/**
 * Per-route limits against the real server process: per-route `allowFrom` (the client address after trusted proxies)
 * and `rateLimit` (a token bucket per route), on mappings and on `/wake` and `/agent` (`hooks.routes`), enforced
 * before the body is read; refusals are counted like every refusal; the limits follow a reload.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../support/wait.js';
import { type Hookgate, runCli, startHookgate, TOKEN } from '../support/server.js';

const SECRET = 'limits-test-secret';
const sign = (body: string) => createHmac('sha256', SECRET).update(body).digest('hex');

/**
 * Headers only, over a raw socket: `Content-Length` announces a body that is never sent. Resolves with the status
 * and how long the answer took; a server that waited for the body would answer only at `hooks.bodyTimeoutMs`.
 */
function headersOnly(
  url: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; ms: number; text: string }> {
  const { hostname, port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname);
    let data = '';
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      data += d;
      const m = /^HTTP\/1\.1 (\d+)/.exec(data);
      if (m && data.includes('\r\n\r\n')) {
        resolve({ status: Number(m[1]), ms: Date.now() - started, text: data });
        sock.destroy();
      }
    });
    sock.on('error', reject);
    const lines = Object.entries({
      host: 'x',
      'content-type': 'application/json',
      'content-length': '100000',
      ...headers,
    }).map(([k, v]) => `${k}: ${v}`);
    sock.write(`POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`);
  });
}

describe('per-route allowFrom and rateLimit', () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate({
      config: {
        gateway: { trustedProxies: ['127.0.0.1', '::1'] },
        hooks: {
          bodyTimeoutMs: 20_000,
          refusals: { windowSeconds: 1 },
          routes: { wake: { rateLimit: { perMinute: 60, burst: 2 } }, agent: { allowFrom: ['203.0.113.0/24'] } },
          mappings: [
            {
              id: 'office',
              match: { path: 'office' },
              action: 'wake',
              textTemplate: 'office {{n}}',
              allowFrom: ['203.0.113.0/24', '2001:db8::/32'],
            },
            {
              id: 'limited',
              match: { path: 'limited' },
              action: 'wake',
              textTemplate: 'limited {{n}}',
              rateLimit: { perMinute: 60, burst: 3 },
            },
            {
              id: 'signed',
              match: { path: 'signed' },
              action: 'wake',
              textTemplate: 'signed {{n}}',
              signature: { scheme: 'hmac-sha256', secret: SECRET },
              rateLimit: { perMinute: 1, burst: 1 },
            },
            // Told apart by a body field: known only after the body.
            {
              id: 'partner',
              match: { path: 'multi', source: 'partner' },
              action: 'wake',
              textTemplate: 'partner',
              allowFrom: ['203.0.113.0/24'],
            },
            { id: 'multi', match: { path: 'multi' }, action: 'wake', textTemplate: 'multi {{source}}' },
          ],
        },
      },
    });
  });
  after(() => hg.cleanup());

  const from = (ip: string, extra: Record<string, string> = {}) => ({ 'x-forwarded-for': ip, ...extra });

  describe('allowFrom', () => {
    it('refuses a client outside the list with 403 forbidden, before the token is looked at, without naming the list', async () => {
      const outside = await hg.post('/hooks/office', { n: 1 }, from('198.51.100.9'));
      assert.equal(outside.status, 403);
      assert.equal(outside.body?.code, 'forbidden');
      assert.match(String(outside.body?.error), /allowFrom/);
      assert.doesNotMatch(outside.text, /203\.0\.113|2001:db8/);
      const noToken = await hg.post('/hooks/office', { n: 1 }, from('198.51.100.9', { authorization: 'Bearer wrong' }));
      assert.equal(noToken.status, 403, 'allowFrom comes before authentication');
      // The client is the right-most address a trusted proxy did not add: a forged left part does not help.
      assert.equal((await hg.post('/hooks/office', { n: 1 }, from('203.0.113.5, 198.51.100.9'))).status, 403);
      const line = await hg.waitForLog((l) => l.msg === 'hook refused: client address not in allowFrom');
      assert.equal(line.path, 'office');
      assert.equal(line.client, '198.51.100.9');
    });

    it('accepts a client inside (IPv4, IPv6, IPv4-mapped IPv6) through the trusted proxy', async () => {
      for (const ip of ['203.0.113.5', '2001:db8::42', '::ffff:203.0.113.7']) {
        const r = await hg.post('/hooks/office', { n: ip }, from(ip));
        assert.equal(r.status, 200, `${ip}: ${r.text}`);
      }
      assert.equal(
        (await hg.post('/hooks/office', { n: 2 }, from('203.0.113.5', { authorization: 'Bearer wrong' }))).status,
        401,
        'inside still needs the token',
      );
    });

    it('answers a refused request at once, without reading its body', async () => {
      const r = await headersOnly(hg.url, '/hooks/office', {
        authorization: `Bearer ${TOKEN}`,
        'x-forwarded-for': '198.51.100.9',
      });
      assert.equal(r.status, 403);
      assert.ok(r.ms < 5000, `answered after ${r.ms} ms`);
      assert.match(r.text, /connection: close/i);
    });

    it('a mapping matched by match.source gets its allowFrom applied once the body tells which mapping it is', async () => {
      const outside = await hg.post('/hooks/multi', { source: 'partner' }, from('198.51.100.9'));
      assert.equal(outside.status, 403);
      assert.equal(outside.body?.code, 'forbidden');
      assert.equal((await hg.post('/hooks/multi', { source: 'partner' }, from('203.0.113.5'))).status, 200);
      assert.equal(
        (await hg.post('/hooks/multi', { source: 'someone' }, from('198.51.100.9'))).status,
        200,
        'the next mapping has no list',
      );
    });

    it('hooks.routes.agent.allowFrom guards /hooks/agent', async () => {
      assert.equal((await hg.post('/hooks/agent', { message: 'x' }, from('198.51.100.9'))).body?.code, 'forbidden');
      assert.equal((await hg.post('/hooks/agent', { message: 'x' }, from('203.0.113.9'))).status, 200);
    });
  });

  describe('rateLimit', () => {
    it('{ perMinute: 60, burst: 3 }: three quick requests pass, the next is 429 rate_limited with Retry-After; unauthenticated requests spend nothing', async () => {
      for (let i = 0; i < 5; i++)
        assert.equal(
          (await hg.post('/hooks/limited', { n: i }, from('198.51.100.20', { authorization: 'Bearer wrong' }))).status,
          401,
        );
      const started = Date.now();
      const statuses: number[] = [];
      let limited: Awaited<ReturnType<Hookgate['post']>> | undefined;
      while (!limited && statuses.length < 20) {
        const r = await hg.post('/hooks/limited', { n: statuses.length }, from('198.51.100.21'));
        statuses.push(r.status);
        if (r.status === 429) limited = r;
      }
      assert.ok(limited, `never limited: ${statuses.join(' ')}`);
      // One token a second refills while the requests run: on a slow machine a few more may pass, never fewer.
      const refilled = Math.floor((Date.now() - started) / 1000);
      assert.deepEqual(statuses.slice(0, 3), [200, 200, 200]);
      assert.ok(statuses.length - 1 <= 3 + refilled, `${statuses.length - 1} accepted in ${Date.now() - started} ms`);
      assert.equal(limited.body?.code, 'rate_limited');
      assert.match(String(limited.body?.error), /rate limit/);
      assert.equal(limited.headers.get('retry-after'), '1');
    });

    it('a request over the limit is answered at once, its body unread', async () => {
      // Spent again right before (a token refills each second).
      await waitFor(
        'the bucket to be spent',
        async () => (await hg.post('/hooks/limited', { n: 'drain' }, from('198.51.100.21'))).status === 429,
      );
      const r = await headersOnly(hg.url, '/hooks/limited', {
        authorization: `Bearer ${TOKEN}`,
        'x-forwarded-for': '198.51.100.21',
      });
      assert.equal(r.status, 429);
      assert.ok(r.ms < 5000, `answered after ${r.ms} ms`);
      assert.match(r.text, /retry-after: \d+/i);
    });

    it('/hooks/wake: hooks.routes.wake.rateLimit', async () => {
      const statuses: number[] = [];
      let limited: Awaited<ReturnType<Hookgate['post']>> | undefined;
      while (!limited && statuses.length < 20) {
        const r = await hg.post('/hooks/wake', { text: `wake ${statuses.length}` });
        statuses.push(r.status);
        if (r.status === 429) limited = r;
      }
      assert.ok(limited, `never limited: ${statuses.join(' ')}`);
      assert.deepEqual(statuses.slice(0, 2), [200, 200]);
      assert.equal(limited.body?.code, 'rate_limited');
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
      const later = await waitFor('a token to refill', async () => {
        const r = await hg.post('/hooks/wake', { text: 'after the wait' });
        return r.status === 200 ? r : undefined;
      });
      assert.equal(later.body?.ok, true);
    });

    it('a signed route: forgeries spend nothing, a verified delivery takes the token, the next is refused before its body', async () => {
      for (let i = 0; i < 3; i++) {
        const forged = await hg.post(
          '/hooks/signed',
          { n: i },
          from(`198.51.100.${30 + i}`, { authorization: '', 'x-signature': '00'.repeat(32) }),
        );
        assert.equal(forged.status, 401);
      }
      const body = JSON.stringify({ n: 'ok' });
      const ok = await hg.post('/hooks/signed', body, { authorization: '', 'x-signature': sign(body) });
      assert.equal(ok.status, 200, ok.text);
      const again = await headersOnly(hg.url, '/hooks/signed', { 'x-signature': sign(body) });
      assert.equal(again.status, 429);
      assert.ok(again.ms < 5000);
      const retry = /retry-after: (\d+)/i.exec(again.text);
      assert.ok(retry && Number(retry[1]) > 1 && Number(retry[1]) <= 60, again.text);
    });
  });

  it('refusals are counted per window like every refusal (received --rejected)', async () => {
    const rows = await waitFor(
      'the refusal counts to be stored',
      async () => {
        const cli = await runCli(['received', '--rejected', '--json', '--limit', '1000', '--config', hg.configFile]);
        const all = JSON.parse(cli.stdout || '[]') as Array<{
          status: number;
          code: string;
          path: string;
          count?: number;
        }>;
        const has = (status: number, path: string) => all.some((r) => r.status === status && r.path === path);
        return has(403, 'office') && has(429, 'limited') && has(429, 'wake') && has(429, 'signed') ? all : undefined;
      },
      15_000,
    );
    assert.equal(rows.find((r) => r.status === 403 && r.path === 'office')?.code, 'forbidden');
    assert.ok(
      rows.every((r) => r.count !== undefined),
      'every refusal is a count, none a record of its own',
    );
  });

  it('the limits follow a reload', async () => {
    const config = JSON.parse(readFileSync(hg.configFile, 'utf8')) as {
      hooks: { mappings: Array<Record<string, unknown>> };
    };
    delete config.hooks.mappings[0]!.allowFrom;
    config.hooks.mappings[1]!.rateLimit = { perMinute: 1, burst: 10 };
    const reloads = hg.logs.filter((l) => l.msg === 'config reloaded').length;
    writeFileSync(hg.configFile, JSON.stringify(config, null, 2));
    hg.proc.kill('SIGHUP');
    await waitFor(
      'the config to reload',
      () => hg.logs.filter((l) => l.msg === 'config reloaded').length > reloads || undefined,
    );
    assert.equal(
      (await hg.post('/hooks/office', { n: 'anyone' }, from('198.51.100.9'))).status,
      200,
      'allowFrom removed',
    );
    // A changed limit starts a full bucket.
    for (let i = 0; i < 10; i++) assert.equal((await hg.post('/hooks/limited', { n: `r${i}` })).status, 200);
    assert.equal((await hg.post('/hooks/limited', { n: 'r10' })).status, 429);
  });
});
