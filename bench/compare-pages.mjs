// Does bench/fill-store.mjs lay rows out in pages as hookgate's own load does? Given a store that a load wrote (a
// retention soak with no fill, kept: `SOAK_KEEP=1 SOAK_SECONDS=120 SOAK_RATE=900 SOAK_AGENT_RATE=100 npm run bench --
// --only retention`), fills a store of the same shape (its requests, the mix of runs, heartbeats and received blocks,
// its span of time, its wake mode) and prints each table's and index's pages in both, with their unused bytes. A
// retention soak on a fill that packs fewer pages than the load grows by the difference until the fill is pruned.
//
// Usage: node bench/compare-pages.mjs LIVE_DB
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { fillStore } from './fill-store.mjs';

const NONE = { pages: 0, unused: 0 };

/** Pages and unused bytes per table and index (SQLite's dbstat). */
function pages(db) {
  const rows = db.prepare('SELECT name, COUNT(*) AS pages, SUM(unused) AS unused FROM dbstat GROUP BY name').all();
  return new Map(rows.map((r) => [r.name, r]));
}

/** The fill options that reproduce the live store's shape. */
export function shapeOf(db) {
  const one = (sql) => Object.values(db.prepare(sql).get())[0];
  const requests = one('SELECT COUNT(*) FROM system_events');
  const runs = one('SELECT COUNT(*) FROM runs');
  const heartbeats = one("SELECT COUNT(*) FROM session_messages WHERE session_key = 'main' AND role = 'user'");
  const [from, to] = Object.values(
    db.prepare('SELECT MIN(created_at), MAX(created_at) FROM system_events').raw().get(),
  );
  return {
    requests,
    days: (to - from) / 86_400_000,
    end: to,
    agentEvery: runs ? Math.round(requests / runs) : 1e12,
    heartbeatEvery: heartbeats ? Math.round(requests / heartbeats) : undefined,
    block: requests / one('SELECT COUNT(*) FROM received_log'),
    wakeMode: runs ? one('SELECT wake_mode FROM runs GROUP BY wake_mode ORDER BY COUNT(*) DESC LIMIT 1') : undefined,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [livePath] = process.argv.slice(2);
  if (!livePath) {
    console.error('usage: node bench/compare-pages.mjs LIVE_DB');
    process.exit(1);
  }
  const live = new Database(livePath, { readonly: true });
  const { requests, ...shape } = shapeOf(live);
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-compare-pages-'));
  try {
    await fillStore(dir, requests, shape);
    const fill = new Database(join(dir, 'hookgate.db'), { readonly: true });
    const [a, b] = [pages(live), pages(fill)];
    fill.close();
    console.log(`shape: ${JSON.stringify({ requests, ...shape })}`);
    console.log('| table or index | live pages | fill pages | fill ÷ live | live unused KiB | fill unused KiB |');
    console.log('|---|---:|---:|---:|---:|---:|');
    const row = (name, x, y) =>
      console.log(
        `| ${name} | ${x.pages} | ${y.pages} | ${(y.pages / x.pages).toFixed(3)} | ${Math.round(x.unused / 1024)} | ${Math.round(y.unused / 1024)} |`,
      );
    // The tables and indexes the load wrote (the fill also writes a day of refusal windows, which the load does not).
    const compared = [...a].filter(([, l]) => l.pages >= 10).sort((x, y) => y[1].pages - x[1].pages);
    const add = (x, y) => ({ pages: x.pages + y.pages, unused: x.unused + y.unused });
    let [allLive, allFill] = [NONE, NONE];
    for (const [name, l] of compared) {
      const f = b.get(name) ?? NONE;
      row(name, l, f);
      [allLive, allFill] = [add(allLive, l), add(allFill, f)];
    }
    row('all of these', allLive, allFill);
  } finally {
    live.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
