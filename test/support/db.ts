/** Read-only looks into a hookgate SQLite file, for assertions the Store interface does not expose. */
import Database from 'better-sqlite3';

/** Every system event ever stored (pending or consumed), by id. */
export function storedEvents(dbPath: string): Map<string, { text: string; sessionKey: string; consumedAt: number | null; origin: string; runId: string | null }> {
  const db = new Database(dbPath, { readonly: true });
  try {
    const rows = db.prepare('SELECT id, text, session_key, consumed_at, origin, run_id FROM system_events').all() as Array<Record<string, unknown>>;
    return new Map(
      rows.map((r) => [
        r.id as string,
        { text: r.text as string, sessionKey: r.session_key as string, consumedAt: (r.consumed_at as number | null) ?? null, origin: r.origin as string, runId: (r.run_id as string | null) ?? null },
      ]),
    );
  } finally {
    db.close();
  }
}
