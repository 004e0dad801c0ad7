// The floor of a durable ingress: bare-server.mjs plus what any durable ingress must do per request — one SQLite
// group commit per event-loop turn (WAL, synchronous NORMAL, as hookgate's default) of two rows (the event and the
// received record), answered after the commit. No auth, routing, validation, metrics or feed: what hookgate costs
// beyond this is hookgate's own. Usage: node bench/floor-server.mjs DB_PATH (prints {"port":N}).
import { createServer } from 'node:http';
import Database from 'better-sqlite3';

const db = new Database(process.argv[2] ?? '/tmp/floor.db');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(`CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, session_key TEXT NOT NULL, text TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS received (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL, event_id TEXT)`);
const insEvent = db.prepare('INSERT INTO events (id, session_key, text, created_at) VALUES (?, ?, ?, ?)');
const insReceived = db.prepare('INSERT INTO received (at, path, status, event_id) VALUES (?, ?, ?, ?)');
let seq = 0;
let queue = [];
const commit = db.transaction((batch) => {
  for (const p of batch) {
    insEvent.run(p.id, 'main', p.text, p.at);
    insReceived.run(p.at, 'wake', 200, p.id);
  }
});
const flush = () => {
  const batch = queue;
  queue = [];
  commit(batch);
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
    queue.push({ id, text: body.text, at: Date.now(), done: () => answer(200, { ok: true, eventId: id }) });
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`));
