/**
 * The Gmail role of the PostgreSQL store (`GmailStore`); the same statements as SQLite's (sqlite-gmail.ts), in
 * single statements or one transaction each, so several nodes may record pushes at once. Which node fetches an
 * account is decided outside the store (a lease: gmail/fetcher.ts).
 */
import type { PgDb } from './postgres-db.js';
import { GMAIL_STATUS_SQL, rowToGmailPush, rowToGmailStatus } from './sqlite-gmail.js';
import type { GmailFetchCompletion, GmailPush, GmailStatus, GmailStore } from './types.js';

const ENSURE_ACCOUNT =
  'INSERT INTO gmail_accounts (account, updated_at) VALUES ($1, $2) ON CONFLICT (account) DO NOTHING';

export class PgGmail implements GmailStore {
  constructor(private readonly db: PgDb) {}

  recordGmailPush(p: GmailPush): Promise<{ duplicate: boolean }> {
    return this.db.tx(async (q) => {
      await q(
        `INSERT INTO gmail_accounts (account, last_push_at, updated_at) VALUES ($1, $2, $2)
         ON CONFLICT (account) DO UPDATE SET last_push_at = EXCLUDED.last_push_at, updated_at = EXCLUDED.updated_at`,
        [p.account, p.receivedAt],
      );
      const r = await q(
        'INSERT INTO gmail_pushes (message_id, account, history_id, received_at) VALUES ($1, $2, $3, $4) ON CONFLICT (message_id) DO NOTHING',
        [p.messageId, p.account, p.historyId, p.receivedAt],
      );
      return { duplicate: (r.rowCount ?? 0) === 0 };
    });
  }

  async pendingGmailPushes(account?: string, limit = 100): Promise<GmailPush[]> {
    const { rows } =
      account === undefined
        ? await this.db.query('SELECT * FROM gmail_pushes WHERE fetched_at IS NULL ORDER BY seq LIMIT $1', [limit])
        : await this.db.query(
            'SELECT * FROM gmail_pushes WHERE account = $1 AND fetched_at IS NULL ORDER BY seq LIMIT $2',
            [account, limit],
          );
    return rows.map(rowToGmailPush);
  }

  completeGmailFetch(c: GmailFetchCompletion): Promise<void> {
    return this.db.tx(async (q) => {
      await q(ENSURE_ACCOUNT, [c.account, c.now]);
      if (c.pushIds.length) {
        await q('UPDATE gmail_pushes SET fetched_at = $1 WHERE message_id = ANY($2::text[]) AND fetched_at IS NULL', [
          c.now,
          c.pushIds,
        ]);
      }
      await q(
        `UPDATE gmail_accounts SET
           history_id = CASE WHEN $1::text IS NOT NULL AND (history_id IS NULL OR length($1::text) > length(history_id)
             OR (length($1::text) = length(history_id) AND $1::text COLLATE "C" > history_id COLLATE "C")) THEN $1::text ELSE history_id END,
           messages_fetched = messages_fetched + $2, last_error = NULL, last_error_at = NULL, updated_at = $3
         WHERE account = $4`,
        [c.historyId, c.messages, c.now, c.account],
      );
    });
  }

  async recordGmailWatch(x: { account: string; expiration: number; historyId: string; now: number }): Promise<void> {
    await this.db.query(
      `INSERT INTO gmail_accounts (account, history_id, watch_expiration, watch_renewed_at, updated_at) VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (account) DO UPDATE SET watch_expiration = EXCLUDED.watch_expiration, watch_renewed_at = EXCLUDED.watch_renewed_at,
         history_id = COALESCE(gmail_accounts.history_id, EXCLUDED.history_id), last_error = NULL, last_error_at = NULL,
         updated_at = EXCLUDED.updated_at`,
      [x.account, x.historyId, x.expiration, x.now],
    );
  }

  async recordGmailError(account: string, error: string | null, now: number): Promise<void> {
    await this.db.query(
      `INSERT INTO gmail_accounts (account, last_error, last_error_at, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account) DO UPDATE SET last_error = EXCLUDED.last_error, last_error_at = EXCLUDED.last_error_at, updated_at = EXCLUDED.updated_at`,
      [account, error, error === null ? null : now, now],
    );
  }

  async readGmailStatus(account: string): Promise<GmailStatus | undefined> {
    const { rows } = await this.db.query(GMAIL_STATUS_SQL('$1'), [account]);
    return rows[0] && rowToGmailStatus(rows[0]);
  }
}
