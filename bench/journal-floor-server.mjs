// Another floor, for comparison with floor-server.mjs: the bare server plus one append (writeSync, no fsync) of the
// turn's requests as JSON lines to a file, answered after it. Durable against kill -9 like SQLite's WAL with
// synchronous NORMAL (both sit in the page cache until the kernel writes them), but with no index, no transaction and
// no page format: what an ingress that journals first and files into SQLite later would pay on the request's path.
// Usage: node bench/journal-floor-server.mjs FILE (prints {"port":N}).
import { openSync, writeSync } from 'node:fs';
import { createServer } from 'node:http';

const fd = openSync(process.argv[2] ?? '/tmp/journal-floor.jsonl', 'a');
let seq = 0;
let queue = [];
const flush = () => {
  const batch = queue;
  queue = [];
  writeSync(fd, batch.map((p) => p.line).join(''));
  for (const p of batch) p.done();
};

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    } catch {
      body = undefined;
    }
    const answer = (status, value) => {
      const text = JSON.stringify(value);
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    if (!body || typeof body.text !== 'string') return answer(400, { ok: false });
    const id = `ev-${process.pid}-${++seq}`;
    if (queue.length === 0) setImmediate(flush);
    const line = `${JSON.stringify({ id, text: body.text, at: Date.now() })}\n`;
    queue.push({ line, done: () => answer(200, { ok: true, eventId: id }) });
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
