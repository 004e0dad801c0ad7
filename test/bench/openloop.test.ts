import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { fromRoot } from '../support/paths.js';

interface OpenLoopResult {
  scheduled: number;
  answered: number;
  non2xx: number;
  errors: number;
  unanswered: number;
  p50: number;
  max: number;
  histogram: Array<[number, number]>;
}
type OpenLoop = (o: {
  url: string;
  kind: string;
  rate: number;
  seconds: number;
  connections: number;
  token?: string;
}) => Promise<OpenLoopResult>;
interface Histogram {
  record(us: number): void;
  percentile(p: number): number;
}

const mod = (await import(fromRoot('bench/openloop.mjs'))) as {
  openLoop: OpenLoop;
  LogHistogram: new () => Histogram;
  loadsOf: (url: string, kind: string, rate: string) => Array<{ url: string; kind: string; rate: number }>;
};
const latency = (await import(fromRoot('bench/latency.mjs'))) as {
  openLoopRounds: (
    o: { loadCpu: number | null; connections: number },
    loads: Array<{ url: string; kind: string; rate: number }>,
    common: { seconds: number; warmup?: boolean },
  ) => Promise<OpenLoopResult[]>;
};

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

describe('bench/openloop.mjs', () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) s.close();
  });

  it("log-bucket percentiles are within the buckets' 5 %", () => {
    const h = new mod.LogHistogram();
    for (let us = 1; us <= 100_000; us++) h.record(us);
    for (const p of [50, 90, 99, 99.9]) {
      const exact = (p / 100) * 100_000;
      assert.ok(Math.abs(h.percentile(p) - exact) <= exact * 0.05, `p${p}: ${h.percentile(p)} against ${exact}`);
    }
  });

  it('charges a server stall to every request scheduled during it, not only to those in flight', async () => {
    // One stall of 300 ms after the 100th request. A closed-loop client on 4 connections would see 4 slow answers;
    // at 200/s, the ~60 requests scheduled during the stall all wait for it.
    let n = 0;
    const { url, server } = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        if (++n === 100) {
          const until = Date.now() + 300;
          while (Date.now() < until) {
            /* the event loop held, as a long checkpoint or prune would */
          }
        }
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' });
        res.end('{}');
      });
    });
    servers.push(server);
    const r = await mod.openLoop({ url, kind: 'wake', rate: 200, seconds: 2, connections: 4 });
    assert.equal(r.answered, 400);
    assert.equal(r.non2xx + r.errors + r.unanswered, 0);
    const over100ms = r.histogram.filter(([top]) => top > 105).reduce((s, [, c]) => s + c, 0);
    assert.ok(over100ms >= 30, `${over100ms} answers over 100 ms`);
    assert.ok(r.max >= 250, `max ${r.max} ms`);
  });

  it('reads chunked answers and error statuses, and replaces connections the server closes', async () => {
    let n = 0;
    const { url, server } = await serve((req, res) => {
      req.resume();
      req.on('end', () => {
        n++;
        if (n % 10 === 0) res.setHeader('connection', 'close');
        res.writeHead(n % 4 === 0 ? 503 : 200, { 'content-type': 'application/json' });
        res.write('{"a":');
        res.end('1}');
      });
    });
    servers.push(server);
    const r = await mod.openLoop({ url, kind: 'agent', rate: 100, seconds: 1, connections: 2 });
    assert.equal(r.answered + r.errors, 100);
    assert.equal(r.unanswered, 0);
    assert.ok(r.answered >= 90, `${r.answered} answered`);
    assert.ok(r.non2xx >= 20 && r.non2xx <= 25, `${r.non2xx} non-2xx`);
  });

  it('sends several loads from one process, each at its rate to its URL, with a summary per load', async () => {
    const seen = new Map<string, number>();
    const { url, server } = await serve((req, res) => {
      seen.set(req.url ?? '', (seen.get(req.url ?? '') ?? 0) + 1);
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    servers.push(server);
    const [wake, agent] = await latency.openLoopRounds(
      { loadCpu: null, connections: 2 },
      [
        { url: `${url}hooks/wake`, kind: 'wake', rate: 90 },
        { url: `${url}hooks/agent`, kind: 'agent', rate: 10 },
      ],
      { seconds: 2, warmup: false },
    );
    assert.deepEqual([wake?.scheduled, wake?.answered, agent?.scheduled, agent?.answered], [180, 180, 20, 20]);
    assert.deepEqual(Object.fromEntries(seen), { '/hooks/wake': 180, '/hooks/agent': 20 });
  });

  it('refuses lists of loads that do not pair up', () => {
    assert.deepEqual(mod.loadsOf('http://a/w,http://a/x', 'wake,agent', '9,1'), [
      { url: 'http://a/w', kind: 'wake', rate: 9 },
      { url: 'http://a/x', kind: 'agent', rate: 1 },
    ]);
    assert.throws(() => mod.loadsOf('http://a/w,http://a/x', 'wake', '9,1'), /lists of the same length \(2, 1, 2\)/);
  });
});
