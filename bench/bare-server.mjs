// The baseline: a bare node:http server that reads a JSON body, parses it and answers JSON.
import { createServer } from 'node:http';

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let ok = true;
    try {
      JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    } catch {
      ok = false;
    }
    const body = JSON.stringify({ ok });
    res.writeHead(ok ? 200 : 400, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
