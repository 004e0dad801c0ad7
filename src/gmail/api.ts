/**
 * The Gmail API calls the push chain makes, as `{gmailApiBaseUrl}/gmail/v1/users/me/…`:
 * `users.history.list`, `users.messages.get` (format full), `users.messages.list`, `users.getProfile`,
 * `users.watch`, `users.stop`. Each call carries the OAuth access token; a 401 refreshes it once and tries again.
 * Retries of transient failures (429, 5xx) are the caller's (withGoogleRetry), so a fetch can pace them.
 */
import type { Transport } from '../http/client.js';
import { GoogleApiError } from '../http/errors.js';
import { googleJson } from '../http/google.js';
import type { GoogleOAuth } from './oauth.js';
import type { GmailApiMessage } from './message.js';

export interface HistoryPage {
  history?: Array<{
    id?: string;
    messagesAdded?: Array<{ message?: { id?: string; threadId?: string; labelIds?: string[] } }>;
  }>;
  nextPageToken?: string;
  /** The mailbox's current history id. */
  historyId?: string;
}

export interface WatchAnswer {
  historyId: string;
  /** Epoch ms, as a string (Google's int64). */
  expiration: string;
}

export class GmailApi {
  constructor(
    private readonly baseUrl: string,
    private readonly oauth: GoogleOAuth,
    private readonly transport?: Transport,
  ) {}

  private async call<T>(
    what: string,
    method: 'GET' | 'POST',
    path: string,
    query?: Record<string, string | string[] | undefined>,
    body?: unknown,
  ): Promise<T> {
    const url = new URL(`${this.baseUrl.replace(/\/+$/, '')}/gmail/v1/users/me/${path}`);
    for (const [k, v] of Object.entries(query ?? {})) {
      for (const item of Array.isArray(v) ? v : v === undefined ? [] : [v]) url.searchParams.append(k, item);
    }
    const send = async () =>
      googleJson<T>(
        what,
        url.toString(),
        {
          method,
          headers: {
            authorization: `Bearer ${await this.oauth.accessToken()}`,
            accept: 'application/json',
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        },
        this.transport,
      );
    try {
      return await send();
    } catch (err) {
      if (!(err instanceof GoogleApiError) || err.status !== 401) throw err;
      this.oauth.invalidate();
      return send();
    }
  }

  /** Changes after `startHistoryId` (messageAdded only); 404 when that history id is too old (GoogleApiError 404). */
  historyList(startHistoryId: string, labelId: string | undefined, pageToken?: string): Promise<HistoryPage> {
    return this.call('users.history.list', 'GET', 'history', {
      startHistoryId,
      historyTypes: 'messageAdded',
      labelId,
      pageToken,
      maxResults: '500',
    });
  }

  messagesGet(id: string): Promise<GmailApiMessage> {
    return this.call('users.messages.get', 'GET', `messages/${encodeURIComponent(id)}`, { format: 'full' });
  }

  messagesList(
    labelIds: string[],
    maxResults: number,
  ): Promise<{ messages?: Array<{ id?: string; threadId?: string }> }> {
    return this.call('users.messages.list', 'GET', 'messages', { labelIds, maxResults: String(maxResults) });
  }

  getProfile(): Promise<{ emailAddress?: string; historyId?: string }> {
    return this.call('users.getProfile', 'GET', 'profile');
  }

  watch(topicName: string, labelIds: string[]): Promise<WatchAnswer> {
    return this.call('users.watch', 'POST', 'watch', undefined, {
      topicName,
      labelIds,
      labelFilterBehavior: 'include',
    });
  }

  async stop(): Promise<void> {
    await this.call('users.stop', 'POST', 'stop', undefined, {});
  }
}
