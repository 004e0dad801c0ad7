// The load generator as a process of its own (so it can be pinned to a core): autocannon with unique bodies, one JSON
// summary line on stdout in wrk-post.lua's shape. Args: URL kind seconds connections [token] [rate]
import autocannon from 'autocannon';

const [url, kind, seconds, connections, token = '', rate = '0'] = process.argv.slice(2);
let i = 0;
const body =
  kind === 'agent'
    ? () =>
        JSON.stringify({ message: `bench message ${i++} @${Date.now()}`, name: 'Bench', wakeMode: 'next-heartbeat' })
    : () => JSON.stringify({ text: `bench event ${i++}`, mode: 'next-heartbeat' });
const r = await autocannon({
  url,
  connections: Number(connections),
  duration: Number(seconds),
  ...(Number(rate) > 0 ? { overallRate: Number(rate) } : {}),
  requests: [
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      setupRequest: (req) => ({ ...req, body: body() }),
    },
  ],
});
process.stdout.write(
  `${JSON.stringify({ autocannon: 1, requests: r.requests.total, seconds: r.duration, non2xx: r.non2xx, errors: r.errors + r.timeouts, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: r.latency.mean })}\n`,
);
