/**
 * Cluster notices over LISTEN/NOTIFY: one dedicated connection (not from the pool: a pooled one would be handed to
 * others) listening on the store's channel while anyone is subscribed. When the connection drops it reconnects by
 * itself with backoff; notices sent meanwhile are lost (the runtime also polls). Never throws, never leaves an
 * 'error' event unhandled.
 */
import pg from 'pg';
import { pgClientConfig, pgError, type PgConnectOptions } from './postgres-connect.js';
import { FEED_EVENT_TYPES, type FeedEvent } from '../feed.js';
import type { ClusterNotice } from './types.js';

/** The channel of a schema's store: `hookgate` in `public`, `hookgate.<schema>` elsewhere (tests, several stores). */
export function noticeChannel(schema: string): string {
  return schema === 'public' ? 'hookgate' : `hookgate.${schema}`;
}

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 10_000;

/** A `feed` notice: the events are already JSON, joined into the envelope without parsing them again. */
export function feedNoticePayload(node: string, events: readonly string[], watchMs?: number): string {
  const watch = watchMs === undefined ? '' : `,"watchMs":${watchMs}`;
  return `{"kind":"feed","node":${JSON.stringify(node)}${watch},"events":[${events.join(',')}]}`;
}

const isFeedEvent = (e: unknown): e is FeedEvent =>
  typeof e === 'object' &&
  e !== null &&
  (FEED_EVENT_TYPES as readonly unknown[]).includes((e as { type?: unknown }).type) &&
  typeof (e as { at?: unknown }).at === 'number';

/** A session's route changed (`key`; none: any may have): the store's own notice, not passed to subscribers. */
export interface RouteNotice {
  kind: 'route';
  key?: string;
}

/** What the store itself does with notices besides passing them on: its route cache (postgres-route-cache.ts). */
export interface NoticeHooks {
  /** LISTEN is in place (true), or its connection was lost or closed (false). */
  listening?: (on: boolean) => void;
  route?: (key: string | undefined) => void;
}

function parseNotice(payload: string | undefined): ClusterNotice | RouteNotice | undefined {
  try {
    const n = JSON.parse(payload ?? '') as Partial<ClusterNotice | RouteNotice>;
    if (n.kind === 'route') return typeof n.key === 'string' ? { kind: 'route', key: n.key } : { kind: 'route' };
    if (n.kind === 'feed' && typeof n.node === 'string' && Array.isArray(n.events)) {
      const events = n.events.filter(isFeedEvent);
      return typeof n.watchMs === 'number'
        ? { kind: 'feed', node: n.node, events, watchMs: n.watchMs }
        : { kind: 'feed', node: n.node, events };
    }
    if (n.kind === 'runs' || n.kind === 'deliveries') return { kind: n.kind };
    if (n.kind === 'lockout' && typeof n.bucket === 'string' && typeof n.until === 'number')
      return { kind: 'lockout', bucket: n.bucket, until: n.until };
  } catch {
    // not ours
  }
  return undefined;
}

export class PgListener {
  private readonly listeners = new Set<(notice: ClusterNotice) => void>();
  private client: pg.Client | undefined;
  private retry: NodeJS.Timeout | undefined;
  private backoffMs = BACKOFF_MIN_MS;
  private stopped = false;
  /** Resolves when the current connection is listening (tests wait for it before notifying). */
  private listening: Promise<void> = Promise.resolve();

  constructor(
    private readonly opts: PgConnectOptions,
    private readonly channel: string,
    private readonly onWarning: (message: string) => void = () => {},
    /**
     * Whether a server process is one of this node's own connections. A 'runs' or 'deliveries' notice this node sent
     * is not passed on: the node told its own runtime directly when it committed, and the echo would only make it
     * claim once more, finding nothing (one empty claim per commit).
     */
    private readonly ownBackend: (pid: number) => boolean = () => false,
    private readonly hooks: NoticeHooks = {},
  ) {}

  subscribe(listener: (notice: ClusterNotice) => void): () => void {
    this.listeners.add(listener);
    if (!this.client && !this.retry && !this.stopped) this.listening = this.connect();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.disconnect();
    };
  }

  /** Resolves once LISTEN is in place (or the attempt failed and a retry is scheduled). */
  ready(): Promise<void> {
    return this.listening;
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.listeners.clear();
    this.disconnect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(pgClientConfig(this.opts));
    this.client = client;
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (msg) => {
      if (msg.channel !== this.channel) return;
      const notice = parseNotice(msg.payload);
      if (notice?.kind === 'route') {
        this.hooks.route?.(notice.key);
        return;
      }
      if (!notice || ((notice.kind === 'runs' || notice.kind === 'deliveries') && this.ownBackend(msg.processId)))
        return;
      for (const l of [...this.listeners]) {
        try {
          l(notice);
        } catch {
          // a listener's own failure is its business
        }
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel.replace(/"/g, '""')}"`);
      if (this.client === client) this.hooks.listening?.(true);
      if (this.client === client && this.backoffMs !== BACKOFF_MIN_MS)
        this.onWarning('cluster notices: listening again');
      this.backoffMs = BACKOFF_MIN_MS;
    } catch (err) {
      this.lost(client, err);
    }
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.client !== client) return; // an old connection's late event
    this.client = undefined;
    this.hooks.listening?.(false);
    client.removeAllListeners('end');
    client.on('error', () => {});
    client.end().catch(() => {});
    if (this.stopped || this.listeners.size === 0) return;
    if (this.backoffMs === BACKOFF_MIN_MS)
      this.onWarning(`cluster notices: ${pgError('LISTEN connection', err, this.opts.url).message}; reconnecting`);
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (!this.stopped && this.listeners.size > 0) this.listening = this.connect();
    }, delay);
    this.retry.unref();
  }

  private disconnect(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    const client = this.client;
    this.client = undefined;
    this.hooks.listening?.(false);
    if (client) {
      client.removeAllListeners('end');
      client.on('error', () => {});
      client.end().catch(() => {});
    }
  }
}
