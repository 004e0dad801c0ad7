/**
 * Read-only looks into a hookgate store, for assertions the Store interface does not expose: the SQLite file, or,
 * for a server that test/support/server.ts put on PostgreSQL (HOOKGATE_TEST_STORE=postgres), its database (through
 * psql, so the look stays synchronous).
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { storageByDir } from './server.js';

type StoredEvent = {
  text: string;
  sessionKey: string;
  consumedAt: number | null;
  origin: string;
  runId: string | null;
};

/** The PostgreSQL URL of the server whose SQLite path would be `dbPath` (`<dir>/data/hookgate.db`), if it is on PostgreSQL. */
function postgresOf(dbPath: string): string | undefined {
  const s = storageByDir.get(dirname(dirname(resolve(dbPath))));
  return s?.driver === 'postgres' ? s.url : undefined;
}

/** Every system event ever stored (pending or consumed), by id. */
export function storedEvents(dbPath: string): Map<string, StoredEvent> {
  const url = postgresOf(dbPath);
  if (url) {
    const sql =
      "SELECT coalesce(json_agg(json_build_object('id', id, 'text', text, 'sessionKey', session_key, 'consumedAt', consumed_at, 'origin', origin, 'runId', run_id) ORDER BY seq), '[]') FROM system_events";
    const rows = JSON.parse(
      execFileSync('psql', [url, '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' }),
    ) as Array<StoredEvent & { id: string }>;
    return new Map(
      rows.map(({ id, ...e }) => [id, { ...e, consumedAt: e.consumedAt === null ? null : Number(e.consumedAt) }]),
    );
  }
  const db = new Database(dbPath, { readonly: true });
  try {
    const rows = db
      .prepare('SELECT id, text, session_key, consumed_at, origin, run_id FROM system_events')
      .all() as Array<Record<string, unknown>>;
    return new Map(
      rows.map((r) => [
        r.id as string,
        {
          text: r.text as string,
          sessionKey: r.session_key as string,
          consumedAt: (r.consumed_at as number | null) ?? null,
          origin: r.origin as string,
          runId: (r.run_id as string | null) ?? null,
        },
      ]),
    );
  } finally {
    db.close();
  }
}
