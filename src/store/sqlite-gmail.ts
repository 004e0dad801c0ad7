/**
 * The Gmail role of the SQLite store (`GmailStore`): its writes, spread into WRITE_OPS (so they commit through the
 * one writer like every write), and its reads, on the store's own connection. History ids are decimal text
 * (Gmail's uint64): "later" is the longer, or the same length and greater (no leading zeros).
 */
import type Database from 'better-sqlite3';
import { prepared } from './sqlite-prepared.js';
import type { Row } from './record-encoding.js';
import type { SqliteWriter } from './sqlite-writer.js';
import type { GmailFetchCompletion, GmailPush, GmailStatus } from './types.js';

const ENSURE_ACCOUNT =
  'INSERT INTO gmail_accounts (account, updated_at) VALUES (?, ?) ON CONFLICT (account) DO NOTHING';

export const GMAIL_WRITE_OPS = {
  recordGmailPush(w: SqliteWriter, p: GmailPush): { duplicate: boolean } {
    prepared(w.db, ENSURE_ACCOUNT).run(p.account, p.receivedAt);
    prepared(w.db, 'UPDATE gmail_accounts SET last_push_at = ?, updated_at = ? WHERE account = ?').run(
      p.receivedAt,
      p.receivedAt,
      p.account,
    );
    const { changes } = prepared(
      w.db,
      'INSERT INTO gmail_pushes (message_id, account, history_id, received_at) VALUES (?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING',
    ).run(p.messageId, p.account, p.historyId, p.receivedAt);
    return { duplicate: changes === 0 };
  },

  completeGmailFetch(w: SqliteWriter, c: GmailFetchCompletion): void {
    prepared(w.db, ENSURE_ACCOUNT).run(c.account, c.now);
    if (c.pushIds.length) {
      prepared(
        w.db,
        'UPDATE gmail_pushes SET fetched_at = ? WHERE message_id IN (SELECT value FROM json_each(?)) AND fetched_at IS NULL',
      ).run(c.now, JSON.stringify(c.pushIds));
    }
    prepared(
      w.db,
      `UPDATE gmail_accounts SET
         history_id = CASE WHEN @h IS NOT NULL AND (history_id IS NULL OR length(@h) > length(history_id)
           OR (length(@h) = length(history_id) AND @h > history_id)) THEN @h ELSE history_id END,
         messages_fetched = messages_fetched + @n, last_error = NULL, last_error_at = NULL, updated_at = @now
       WHERE account = @account`,
    ).run({ h: c.historyId, n: c.messages, now: c.now, account: c.account });
  },

  recordGmailWatch(w: SqliteWriter, x: { account: string; expiration: number; historyId: string; now: number }): void {
    prepared(w.db, ENSURE_ACCOUNT).run(x.account, x.now);
    prepared(
      w.db,
      `UPDATE gmail_accounts SET watch_expiration = @exp, watch_renewed_at = @now, history_id = COALESCE(history_id, @h),
         last_error = NULL, last_error_at = NULL, updated_at = @now WHERE account = @account`,
    ).run({ exp: x.expiration, now: x.now, h: x.historyId, account: x.account });
  },

  recordGmailError(w: SqliteWriter, account: string, error: string | null, now: number): void {
    prepared(w.db, ENSURE_ACCOUNT).run(account, now);
    prepared(w.db, 'UPDATE gmail_accounts SET last_error = ?, last_error_at = ?, updated_at = ? WHERE account = ?').run(
      error,
      error === null ? null : now,
      now,
      account,
    );
  },
};

/** Fetched pushes are kept as long as received records (duplicate detection of late redeliveries), then deleted. */
export function pruneGmailPushes(db: Database.Database, before: number): number {
  return prepared(db, 'DELETE FROM gmail_pushes WHERE fetched_at IS NOT NULL AND received_at < ?').run(before).changes;
}

export function rowToGmailPush(r: Row): GmailPush {
  return {
    messageId: r.message_id as string,
    account: r.account as string,
    historyId: r.history_id as string,
    receivedAt: Number(r.received_at),
  };
}

export function rowToGmailStatus(r: Row): GmailStatus {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    account: r.account as string,
    historyId: (r.history_id as string | null) ?? null,
    watchExpiration: num(r.watch_expiration),
    watchRenewedAt: num(r.watch_renewed_at),
    lastPushAt: num(r.last_push_at),
    messagesFetched: Number(r.messages_fetched),
    lastError: (r.last_error as string | null) ?? null,
    lastErrorAt: num(r.last_error_at),
    updatedAt: Number(r.updated_at),
    pendingPushes: Number(r.pending),
  };
}

export const GMAIL_STATUS_SQL = (param: string) =>
  `SELECT a.*, (SELECT COUNT(*) FROM gmail_pushes p WHERE p.account = a.account AND p.fetched_at IS NULL) AS pending
   FROM gmail_accounts a WHERE a.account = ${param}`;

export async function readGmailStatusSqlite(db: Database.Database, account: string): Promise<GmailStatus | undefined> {
  const row = prepared(db, GMAIL_STATUS_SQL('?')).get(account) as Row | undefined;
  return row && rowToGmailStatus(row);
}

export async function pendingGmailPushesSqlite(
  db: Database.Database,
  account?: string,
  limit = 100,
): Promise<GmailPush[]> {
  const rows = (
    account === undefined
      ? prepared(db, 'SELECT * FROM gmail_pushes WHERE fetched_at IS NULL ORDER BY seq LIMIT ?').all(limit)
      : prepared(db, 'SELECT * FROM gmail_pushes WHERE account = ? AND fetched_at IS NULL ORDER BY seq LIMIT ?').all(
          account,
          limit,
        )
  ) as Row[];
  return rows.map(rowToGmailPush);
}
