/** The Gmail role of the store (`GmailStore`, part of `Store`): see docs/gmail.md, "How it works". */
/** One Pub/Sub push of a Gmail mailbox, accepted (its OIDC token verified) and committed before the 2xx. */
export interface GmailPush {
  /** Pub/Sub's `message.messageId`: unique per published message (a redelivery repeats it). */
  messageId: string;
  /** The mailbox (`emailAddress` of the notification). */
  account: string;
  /** Gmail's `historyId` of the notification: a decimal string (a uint64 in Gmail's API). */
  historyId: string;
  receivedAt: number;
}

/** What the store knows of one watched mailbox (`hookgate gmail status`, the admin API). */
export interface GmailAccountState {
  account: string;
  /** The history id every change up to which has been fetched: the next `users.history.list` starts here. */
  historyId: string | null;
  /** When the mailbox's watch lapses (epoch ms, from `users.watch`); null before the first watch. */
  watchExpiration: number | null;
  /** When `users.watch` last succeeded. */
  watchRenewedAt: number | null;
  lastPushAt: number | null;
  /** Messages turned into runs since the account was first seen. */
  messagesFetched: number;
  /** The last failure of a fetch or a watch (no mail content, no token); null after the next success. */
  lastError: string | null;
  lastErrorAt: number | null;
  updatedAt: number;
}

export interface GmailStatus extends GmailAccountState {
  /** Accepted pushes whose fetch has not completed yet. */
  pendingPushes: number;
}

/** The fetcher's commit after processing pushes: the new history id and the pushes it covered, in one transaction. */
export interface GmailFetchCompletion {
  account: string;
  /** Pushes covered (fetched): marked done. */
  pushIds: string[];
  /** The history id fetched up to; null keeps the stored one. Never moves backwards. */
  historyId: string | null;
  /** Messages turned into runs by this fetch. */
  messages: number;
  now: number;
}

/**
 * The Gmail push chain (docs/gmail.md): accepted pushes (a durable queue: a crash between the 2xx and the fetch
 * resumes the fetch at start), each account's history position, watch expiry and last error.
 */
export interface GmailStore {
  /**
   * Commit an accepted push (and the account's `lastPushAt`, creating its row). A `messageId` already stored is a
   * duplicate: nothing changes but `lastPushAt`.
   */
  recordGmailPush(push: GmailPush): Promise<{ duplicate: boolean }>;
  /** Pushes not fetched yet, oldest first (every account when `account` is omitted). */
  pendingGmailPushes(account?: string, limit?: number): Promise<GmailPush[]>;
  completeGmailFetch(c: GmailFetchCompletion): Promise<void>;
  /**
   * A successful `users.watch`: the expiry, and `historyId` as the account's start when it has none yet (the first
   * watch: mail from then on is fetched, none from before).
   */
  recordGmailWatch(w: { account: string; expiration: number; historyId: string; now: number }): Promise<void>;
  /** A failed fetch or watch (null: clear it). */
  recordGmailError(account: string, error: string | null, now: number): Promise<void>;
  /** One account's state, or undefined before anything happened to it. */
  readGmailStatus(account: string): Promise<GmailStatus | undefined>;
}
