// Another floor, for comparison with floor-server.mjs: the bare server plus one append (writeSync, no fsync) of the
// turn's requests as JSON lines to a file, answered after it. Durable against kill -9 like SQLite's WAL with
// synchronous NORMAL (both sit in the page cache until the kernel writes them), but with no index, no transaction and
// no page format: what an ingress that journals first and files into SQLite later would pay on the request's path.
// Usage: node bench/journal-floor-server.mjs FILE (prints {"port":N}).
import { openSync, writeSync } from 'node:fs';
import { serveWakes } from './floor-http.mjs';

const fd = openSync(process.argv[2] ?? '/tmp/journal-floor.jsonl', 'a');
serveWakes((batch) => writeSync(fd, batch.map((p) => `${JSON.stringify(p)}\n`).join('')));
