/**
 * A body over the limit is answered 413 in a way every HTTP client can read: the server reads and drops the rest of
 * the upload (within a bound) before it closes, instead of closing under the client, which made Node's fetch and
 * http clients see EPIPE/ECONNRESET rather than the answer.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type Hookgate, startHookgate, TOKEN } from '../support/server.js';

const MB = 1_000_000;
/** Whether a reset wins the race depends on socket buffer timing: each case is sent several times in a row. */
const TRIES = 3;

function postWithHttp(
  url: string,
  body: Buffer,
  chunked: boolean,
): Promise<{ status: number; text: string; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
    };
    if (!chunked) headers['content-length'] = body.length;
    const req = http.request(url, { method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, connection: res.headers.connection }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (!chunked) return void req.end(body);
    // Chunked, in pieces, so the limit is crossed mid-stream rather than announced up front.
    const piece = 256 * 1024;
    let at = 0;
    const next = () => {
      while (at < body.length) {
        const ok = req.write(body.subarray(at, (at += piece)));
        if (!ok) return void req.once('drain', next);
      }
      req.end();
    };
    next();
  });
}

describe('413 for large bodies, readable by fetch and http', () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate();
  });
  after(() => hg.cleanup());

  for (const size of [8 * MB, 64 * MB]) {
    it(`fetch reads the 413 for a ${size / MB} MB body`, async () => {
      for (let i = 0; i < TRIES; i++) await fetch413(size);
    });
    const fetch413 = async (size: number) => {
      const res = await fetch(`${hg.url}/hooks/wake`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: Buffer.alloc(size, 0x61),
      });
      assert.equal(res.status, 413);
      assert.equal(res.headers.get('connection'), 'close');
      const body = (await res.json()) as { code: string };
      assert.equal(body.code, 'payload_too_large');
    };

    it(`http reads the 413 for a ${size / MB} MB body with Content-Length`, async () => {
      for (let i = 0; i < TRIES; i++) {
        const r = await postWithHttp(`${hg.url}/hooks/wake`, Buffer.alloc(size, 0x61), false);
        assert.equal(r.status, 413);
        assert.equal(r.connection, 'close');
        assert.match(r.text, /payload_too_large/);
      }
    });

    it(`http reads the 413 for a ${size / MB} MB chunked body`, async () => {
      for (let i = 0; i < TRIES; i++) {
        const r = await postWithHttp(`${hg.url}/hooks/wake`, Buffer.alloc(size, 0x61), true);
        assert.equal(r.status, 413);
        assert.match(r.text, /payload_too_large/);
      }
    });
  }

  it('the service still answers afterwards', async () => {
    const r = await hg.post('/hooks/wake', { text: 'after the large bodies' });
    assert.equal(r.status, 200);
  });
});

describe('a UTF-8 byte-order mark before the JSON', () => {
  let hg: Hookgate;
  before(async () => {
    hg = await startHookgate();
  });
  after(() => hg.cleanup());

  it('is accepted, as OpenClaw accepts it', async () => {
    const json = Buffer.from(JSON.stringify({ text: 'from a Windows sender' }));
    const res = await fetch(`${hg.url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(((await res.json()) as { ok: boolean }).ok, true);
  });
});
