// The floor of a durable ingress: bare-server.mjs plus what any durable ingress must do per request — one SQLite
// group commit per event-loop turn (WAL, synchronous NORMAL, as hookgate's default) of two rows (the event and the
// received record), answered after the commit. No auth, routing, validation, metrics or feed: what hookgate costs
// beyond this is hookgate's own. With ROWS 1, one row per request (the event, its received metadata in its own
// columns): what a second row per request costs.
// Usage: node bench/floor-server.mjs DB_PATH [ROWS: 2 (default) | 1] (prints {"port":N}).
import Database from 'better-sqlite3';
import { serveWakes } from './floor-http.mjs';

const db = new Database(process.argv[2] ?? '/tmp/floor.db');
const rows = Number(process.argv[3] ?? 2);
if (rows !== 1 && rows !== 2) throw new Error(`ROWS: 1 or 2, not ${process.argv[3]}`);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec(`CREATE TABLE IF NOT EXISTS events (id TEXT PRIMARY KEY, session_key TEXT NOT NULL, text TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS events1 (id TEXT PRIMARY KEY, session_key TEXT NOT NULL, text TEXT NOT NULL, created_at INTEGER NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS received (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, path TEXT NOT NULL, status INTEGER NOT NULL, event_id TEXT)`);
const insEvent = db.prepare('INSERT INTO events (id, session_key, text, created_at) VALUES (?, ?, ?, ?)');
const insReceived = db.prepare('INSERT INTO received (at, path, status, event_id) VALUES (?, ?, ?, ?)');
const insOne = db.prepare(
  'INSERT INTO events1 (id, session_key, text, created_at, path, status) VALUES (?, ?, ?, ?, ?, ?)',
);
const commit =
  rows === 2
    ? db.transaction((batch) => {
        for (const p of batch) {
          insEvent.run(p.id, 'main', p.text, p.at);
          insReceived.run(p.at, 'wake', 200, p.id);
        }
      })
    : db.transaction((batch) => {
        for (const p of batch) insOne.run(p.id, 'main', p.text, p.at, 'wake', 200);
      });

serveWakes(commit);
