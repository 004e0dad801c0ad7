/** `request` with `plainHttp` (src/http/plain.ts): the same outcome as through fetch, without loading it. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { request } from '../../src/http/client.js';

describe('http: plain requests (Node http, not fetch)', () => {
  let server: Server;
  let base: string;
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString('utf8')));
      req.on('end', () => {
        if (req.url === '/moved') return res.writeHead(302, { location: '/elsewhere' }).end();
        if (req.url === '/big') return res.writeHead(200).end('x'.repeat(5000));
        res.writeHead(201, { 'content-type': 'application/json', 'x-seen': String(req.headers.authorization) });
        res.end(JSON.stringify({ method: req.method, body }));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it('answers like fetch: status, reason, body, JSON, headers', async () => {
    const r = await request(
      `${base}/x`,
      { method: 'POST', headers: { authorization: 'Bearer t' }, body: 'hi' },
      { plainHttp: true },
    );
    assert.equal(r.kind, 'response');
    if (r.kind !== 'response') return;
    assert.equal(r.status, 201);
    assert.equal(r.statusText, 'Created');
    assert.deepEqual(r.json, { method: 'POST', body: 'hi' });
    assert.equal(r.headers.get('x-seen'), 'Bearer t');
  });

  it('caps the body, follows no redirect, and a refused connection is a network code', async () => {
    const big = await request(`${base}/big`, {}, { plainHttp: true, maxBytes: 100 });
    assert.ok(big.kind === 'response' && big.truncated && big.text.length === 100);
    const moved = await request(`${base}/moved`, {}, { plainHttp: true });
    assert.ok(moved.kind === 'response' && moved.status === 302);
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    assert.deepEqual(await request(`http://127.0.0.1:${port}/`, {}, { plainHttp: true }), {
      kind: 'network',
      code: 'ECONNREFUSED',
    });
  });

  it('takes a Headers object too, and loads no undici for a plain one (a fresh process: its module list)', async () => {
    const r = await request(
      `${base}/x`,
      { method: 'POST', headers: new Headers({ authorization: 'Bearer h' }), body: '' },
      { plainHttp: true },
    );
    assert.ok(r.kind === 'response' && r.headers.get('x-seen') === 'Bearer h');
    const client = new URL('../../src/http/client.js', import.meta.url).href;
    const script = `const { request } = await import(${JSON.stringify(client)});
      const r = await request(${JSON.stringify(`${base}/x`)}, { method: 'POST', headers: { authorization: 'Bearer p' }, body: 'b' }, { plainHttp: true });
      process.stdout.write(JSON.stringify({ status: r.status, undici: process.moduleLoadList.filter((m) => m.includes('undici')) }));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
    assert.deepEqual(JSON.parse(stdout), { status: 201, undici: [] });
  });
});
