/**
 * The Gmail fetcher (docs/gmail.md, "How it works"): turns accepted pushes (GmailStore's durable queue) into agent
 * runs. Per account, from the stored history id: `users.history.list` (messageAdded, the configured labels) →
 * `users.messages.get` (full) → `{ id, threadId, from, to, subject, date, snippet, body }` → the `gmail` route (the
 * preset's mapping, or an earlier mapping of yours on path `gmail`) → the same dispatch as an HTTP hook, with an
 * idempotency key per message id, so a message refetched after a crash or a resync never makes a second run. Then
 * one commit marks the pushes fetched and moves the history id. A history id too old (404) syncs the latest
 * messages instead. 429 / 5xx are retried with backoff inside a fetch; a fetch that still fails is recorded
 * (`lastError`) and tried again later, its pushes still pending. Pending pushes are looked at on start (a crash
 * after the 2xx resumes here), when the ingress signals a push, and every POLL_MS (pushes another node accepted).
 * One node at a time fetches an account: a lease `gmail-fetch:<account>` (the heartbeat lease mechanism).
 */
import { createHash } from 'node:crypto';
import { gmailTopicName } from '../config/checks/gmail.js';
import type { GmailConfig } from '../config/schema/gmail.js';
import { HttpError } from '../errors.js';
import type { HooksContext } from '../hooks/context.js';
import { dispatch, type RuntimeSignals } from '../hooks/dispatch.js';
import type { HookRoutes } from '../hooks/routes.js';
import { GmailApi } from './api.js';
import { GoogleApiError, withGoogleRetry, type RetryPolicy, GOOGLE_RETRY } from './http.js';
import { type GmailMail, toMail } from './message.js';
import { GoogleOAuth } from './oauth.js';
import type { Logger } from '../log.js';
import type { ClusterStore, GmailStore, IngressStore } from '../store/types.js';
import { errorMessage, logSafe } from '../text-safe.js';

export type GmailFetcherStore = IngressStore & GmailStore & Pick<ClusterStore, 'leaseHeartbeat' | 'releaseHeartbeat'>;

export interface GmailDeps {
  store: GmailFetcherStore;
  logger: Logger;
  owner: string;
  ctx: () => HooksContext;
  signals: RuntimeSignals;
  /** The process's one instance (app.ts), which the ingress uses too: each generation's mappings compile once. */
  routes: HookRoutes;
  fetchFn?: typeof fetch;
  retry?: RetryPolicy;
}

/** Pushes another node accepted are found within this. */
const POLL_MS = 15_000;
/** A failed fetch is tried again after this, doubled per failure up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 5_000;
const RETRY_MAX_MS = 15 * 60_000;
/** The fetch lease (renewed per message): a dead node's lapses after this, like a run's. */
const LEASE_MS = 30_000;
/** How many of the latest messages a resync (history id too old, or none yet) looks at. */
export const RESYNC_MESSAGES = 10;
/** Message idempotency keys outlive `hooks.idempotencyTtlSeconds`: a resync may meet a message of last week. */
const MESSAGE_KEY_TTL_MS = 30 * 86_400_000;

/** A Google client per config (credentials and URLs), rebuilt when they change. */
export class GoogleClients {
  private key = '';
  private api: GmailApi | undefined;
  constructor(private readonly fetchFn: typeof fetch = fetch) {}
  for(gmail: GmailConfig): GmailApi | undefined {
    if (!gmail.oauth) return undefined;
    const key = JSON.stringify([gmail.gmailApiBaseUrl, gmail.tokenUrl, gmail.oauth]);
    if (key !== this.key || !this.api) {
      this.key = key;
      this.api = new GmailApi(
        gmail.gmailApiBaseUrl,
        new GoogleOAuth({ tokenUrl: gmail.tokenUrl, ...gmail.oauth }, this.fetchFn),
        this.fetchFn,
      );
    }
    return this.api;
  }
}

export class GmailFetcher {
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;

  constructor(
    private readonly deps: GmailDeps,
    private readonly clients: GoogleClients,
  ) {}

  /** Look at the pending pushes now (a push was committed; the service started). */
  notify(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pump().finally(() => (this.running = undefined));
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return this.running ?? Promise.resolve();
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => this.notify(), ms);
    this.timer.unref();
  }

  private async pump(): Promise<void> {
    do {
      this.again = false;
      const gmail = this.deps.ctx().config.hooks.gmail;
      if (!gmail.account) return;
      try {
        await this.fetchAccount(gmail, gmail.account);
        this.failures = 0;
      } catch (err) {
        this.failures++;
        const wait = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (this.failures - 1));
        const message = errorMessage(err);
        this.deps.logger.warn(
          { account: gmail.account, retryInMs: wait, err: logSafe(message, 300) },
          'gmail fetch failed; the pushes stay pending and are fetched again',
        );
        await this.deps.store.recordGmailError(gmail.account, logSafe(message, 300), Date.now()).catch(() => {});
        this.schedule(wait);
        return;
      }
    } while (this.again && !this.stopped);
    this.schedule(POLL_MS);
  }

  private async fetchAccount(gmail: GmailConfig, account: string): Promise<void> {
    const { store, owner } = this.deps;
    const pending = await store.pendingGmailPushes(account, 1000);
    if (pending.length === 0) return;
    const lease = `gmail-fetch:${account}`;
    if (!(await store.leaseHeartbeat(lease, owner, Date.now(), LEASE_MS))) return; // another node fetches it
    try {
      const api = this.clients.for(gmail);
      if (!api) throw new Error('hooks.gmail.oauth is not configured');
      const retry = <T>(fn: () => Promise<T>) => withGoogleRetry(fn, this.deps.retry ?? GOOGLE_RETRY);
      const status = await store.readGmailStatus(account);
      const found = status?.historyId ? await this.newMessages(api, gmail, status.historyId, retry) : undefined;
      const { ids, historyId } = found ?? (await this.resync(api, gmail, retry));
      let runs = 0;
      for (const id of ids) {
        await store.leaseHeartbeat(lease, owner, Date.now(), LEASE_MS);
        const msg = await retry(() => api.messagesGet(id)).catch((err: unknown) => {
          if (err instanceof GoogleApiError && err.status === 404) return undefined; // deleted since
          throw err;
        });
        if (msg) runs += await this.dispatchMail(account, toMail(msg, gmail));
      }
      await store.completeGmailFetch({
        account,
        pushIds: pending.map((p) => p.messageId),
        historyId,
        messages: runs,
        now: Date.now(),
      });
      this.deps.logger.info(
        { account, pushes: pending.length, messages: ids.length, runs, historyId },
        'gmail fetched',
      );
    } finally {
      await store.releaseHeartbeat(lease, owner).catch(() => {});
    }
  }

  /** Message ids added since `start` in the watched labels, oldest first; undefined when `start` is too old (404). */
  private async newMessages(
    api: GmailApi,
    gmail: GmailConfig,
    start: string,
    retry: <T>(fn: () => Promise<T>) => Promise<T>,
  ) {
    const ids = new Set<string>();
    let historyId: string | null = null;
    let pageToken: string | undefined;
    const labelId = gmail.labels.length === 1 ? gmail.labels[0] : undefined;
    try {
      do {
        const token = pageToken;
        const page = await retry(() => api.historyList(start, labelId, token));
        for (const h of page.history ?? []) {
          for (const added of h.messagesAdded ?? []) {
            const m = added.message;
            if (!m?.id) continue;
            if (m.labelIds && !m.labelIds.some((l) => gmail.labels.includes(l))) continue;
            ids.add(m.id);
          }
        }
        historyId = page.historyId ?? historyId;
        pageToken = page.nextPageToken;
      } while (pageToken);
    } catch (err) {
      if (err instanceof GoogleApiError && err.status === 404) {
        this.deps.logger.warn(
          { account: gmail.account },
          'gmail history id too old (404): syncing the latest messages instead',
        );
        return undefined;
      }
      throw err;
    }
    return { ids: [...ids], historyId };
  }

  /** The latest messages of the watched labels (oldest first) and the mailbox's current history id. */
  private async resync(api: GmailApi, gmail: GmailConfig, retry: <T>(fn: () => Promise<T>) => Promise<T>) {
    const profile = await retry(() => api.getProfile());
    const ids = new Set<string>();
    for (const label of gmail.labels) {
      const list = await retry(() => api.messagesList([label], RESYNC_MESSAGES));
      for (const m of list.messages ?? []) if (m.id) ids.add(m.id);
    }
    // messages.list answers newest first: run the oldest first.
    return { ids: [...ids].reverse(), historyId: profile.historyId ?? null };
  }

  /** One mail → the `gmail` route → dispatch, idempotent by message id. 1 when a run was queued, 0 otherwise. */
  private async dispatchMail(account: string, mail: GmailMail): Promise<number> {
    const ctx = this.deps.ctx();
    const now = Date.now();
    const payload = { source: 'gmail', messages: [mail] };
    const rawBody = Buffer.from(JSON.stringify(payload));
    const key = `${account}:${mail.id}`;
    const keyHash = createHash('sha256').update(key).digest('hex');
    // Verified: hookgate fetched this mail itself, with its own Google credentials; no caller presents a token.
    const routed = await this.deps.routes.resolve({
      ctx,
      subPath: 'gmail',
      payload,
      rawBody,
      headers: {},
      rawHeaders: {},
      query: new URLSearchParams(),
      now,
      tokenVerified: true,
    });
    if (routed.kind !== 'actions') {
      this.deps.logger.info(
        { account, outcome: routed.kind },
        'gmail message not queued: the gmail route did not make a run',
      );
      return 0;
    }
    try {
      const answer = await dispatch(ctx, this.deps.store, this.deps.signals, {
        actions: routed.actions,
        fanOut: routed.fanOut,
        // The fingerprint is the key itself: a message refetched with another body (a config change) is still a duplicate.
        idempotency: {
          scope: 'gmail',
          keyHash,
          fingerprint: keyHash,
          expiresAt: now + MESSAGE_KEY_TTL_MS,
          sender: `gmail:${account}`,
          maxPerSender: ctx.config.hooks.idempotencyMaxKeys,
        },
        received: {
          at: now,
          method: 'POST',
          path: 'gmail',
          clientIp: 'gmail-api',
          status: 0,
          code: null,
          eventIds: [],
          runIds: [],
          mappingId: routed.mappingId,
          durationMs: 0,
        },
      });
      return answer.duplicate ? 0 : 1;
    } catch (err) {
      // A refusal of the mapping's own making (policy, validation) cannot pass by fetching again: logged, skipped.
      if (err instanceof HttpError && err.status < 500) {
        this.deps.logger.warn(
          { account, code: err.code, err: logSafe(err.message, 200) },
          'gmail message refused by the gmail route; skipped',
        );
        return 0;
      }
      throw err;
    }
  }
}

export { gmailTopicName };
