// A closed loop of hook requests for the counting benches (bench/instructions.mjs, bench/allocations.mjs): a number of
// keep-alive connections, each sending its next POST once the last one was answered, every body a new one.
import http from 'node:http';
import { createInterface } from 'node:readline';

/** The URL a started server prints on its stdout: hookgate's `{"url":…}` line, a floor server's `{"port":N}`. */
export function printedUrl(child, exited = (code) => new Error(`the server exited ${code}`)) {
  return new Promise((ok, fail) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const msg = JSON.parse(line);
        if (msg.url) ok(msg.url);
        if (msg.port) ok(`http://127.0.0.1:${msg.port}`);
      } catch {
        /* not JSON */
      }
    });
    child.once('exit', (code) => fail(exited(code)));
  });
}

/**
 * `burst(n)` sends `n` requests to `url` + `path` over `connections` connections (a non-2xx answer rejects); a wake's
 * body, or an agent request's when `path` ends with `agent`. `close()` drops the connections.
 */
export function closedLoop({ url, path, token, connections }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const agentBody = path.endsWith('agent');
  let seq = 0;
  const post = () =>
    new Promise((ok, fail) => {
      const body = JSON.stringify(
        agentBody
          ? { message: `bench message ${seq++}`, name: 'Bench', wakeMode: 'next-heartbeat' }
          : { text: `bench event ${seq++}`, mode: 'next-heartbeat' },
      );
      const headers = {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'content-length': Buffer.byteLength(body),
      };
      const req = http.request(`${url}${path}`, { method: 'POST', agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode < 300 ? ok() : fail(new Error(`${path} answered ${res.statusCode}`))));
      });
      req.on('error', fail);
      req.end(body);
    });
  return {
    async burst(n) {
      let sent = 0;
      await Promise.all(
        Array.from({ length: connections }, async () => {
          while (sent++ < n) await post();
        }),
      );
    },
    close: () => agent.destroy(),
  };
}
