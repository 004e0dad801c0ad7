// The HTTP half of the floor servers (floor-server.mjs, journal-floor-server.mjs, floor-pg-server.mjs):
// bare-server.mjs's request handling, plus a group commit — every wake of one event-loop turn goes to `commitBatch`
// as one batch, and each is answered only after it returned (or, if it returns a promise, after that resolved; the
// wakes that arrive meanwhile wait for it and go as the next batch: one batch in flight, as hookgate's). Prints
// {"port":N} once listening.
import { createServer } from 'node:http';

/** `commitBatch(batch)`: batch is `{ id, text, at }[]`; it must have made them durable when it returns (or resolves). */
export function serveWakes(commitBatch) {
  let seq = 0;
  let queue = [];
  let inFlight = false;
  const flush = () => {
    const batch = queue;
    queue = [];
    const answer = () => {
      for (const p of batch) p.done();
    };
    const committed = commitBatch(batch);
    if (typeof committed?.then !== 'function') return answer();
    inFlight = true;
    committed.then(() => {
      inFlight = false;
      answer();
      if (queue.length) flush();
    });
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
        res.writeHead(status, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(text),
        });
        res.end(text);
      };
      if (!body || typeof body.text !== 'string') return answer(400, { ok: false });
      const id = `ev-${process.pid}-${++seq}`;
      if (queue.length === 0 && !inFlight) setImmediate(flush);
      queue.push({ id, text: body.text, at: Date.now(), done: () => answer(200, { ok: true, eventId: id }) });
    });
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
}
