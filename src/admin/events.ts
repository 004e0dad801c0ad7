/**
 * `GET /api/v1/events` (docs/reference.md#live-feed): the live feed as Server-Sent Events. Each event is one frame,
 * `id: <epoch>-<seq>` / `event: <type>` / `data: <json>`; `Last-Event-ID` resumes from the bus's ring buffer, or
 * gets `event: reset` when it cannot (docs/admin.md, "Live feed"). A comment line every 15 s keeps proxies from
 * closing an idle stream.
 *
 * A client never slows anyone else: the bus only schedules a flush, and one flush every FEED_FLUSH_MS writes what
 * each client has not yet been sent (one socket write per client per flush, whatever the load). A flush per event-loop
 * turn would cost the ingress a socket write for every few events under load; a flush every 25 ms batches them, and
 * 25 ms is below what a person watching the feed can notice. A client whose unsent bytes pass `maxUnsentBytes`
 * at a flush (it reads slower than events come) is dropped: its socket is closed, it may reconnect with
 * `Last-Event-ID`. So per client memory is bounded by that limit plus one flush (at most FEED_FLUSH_EVENTS small
 * events), and the number of clients by `maxClients`.
 */
import type { ServerResponse } from 'node:http';
import { FEED_EVENT_TYPES, type FeedBus, type FeedEventType } from '../feed.js';
import type { Logger } from '../log.js';
import type { AdminRoute } from './route.js';

export const FEED_PATH = '/api/v1/events';
export const FEED_KEEPALIVE_MS = 15_000;
export const FEED_MAX_UNSENT_BYTES = 1024 * 1024;
export const FEED_MAX_CLIENTS = 64;
/** Events are written to the clients this often, in one write each (see the class comment). */
export const FEED_FLUSH_MS = 25;
/** …or as soon as this many events wait, whichever comes first (a quarter of the ring buffer). */
export const FEED_FLUSH_EVENTS = 1024;
/** What EventSource waits before it reconnects (sent once as `retry:`). */
const RETRY_MS = 2000;

export interface FeedRouteOptions {
  keepAliveMs?: number;
  maxUnsentBytes?: number;
  maxClients?: number;
  logger?: Logger;
  /** Aborted when the admin listener stops: every stream ends (an open stream would hold the listener's close). */
  signal?: AbortSignal;
}

interface Client {
  res: ServerResponse;
  /** The next sequence number to send. */
  next: number;
  types: ReadonlySet<FeedEventType> | undefined;
}

function answer(res: ServerResponse, status: number, code: string, error: string): void {
  const text = JSON.stringify({ ok: false, error, code });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** `?types=run,delivery`: a subset of the event types, or undefined for all; a word that is not a type is an error. */
export function parseTypes(value: string | null): ReadonlySet<FeedEventType> | undefined | Error {
  if (value === null || value.trim() === '') return undefined;
  const words = value
    .split(',')
    .map((w) => w.trim())
    .filter(Boolean);
  const bad = words.filter((w) => !(FEED_EVENT_TYPES as readonly string[]).includes(w));
  if (bad.length)
    return new Error(
      `types: unknown event type ${JSON.stringify(bad[0]!.slice(0, 40))}; use any of ${FEED_EVENT_TYPES.join(', ')}`,
    );
  return new Set(words as FeedEventType[]);
}

/** The SSE endpoint's state: its clients and the one flush per turn that feeds them. */
export class FeedStreams {
  private readonly clients = new Set<Client>();
  private unsubscribe: (() => void) | undefined;
  /** The next flush (FEED_FLUSH_MS after the first unsent event), or an earlier one in a burst. */
  private timer: NodeJS.Timeout | undefined;
  private early: NodeJS.Immediate | undefined;
  private sinceFlush = 0;
  private readonly keepAliveMs: number;
  private readonly maxUnsentBytes: number;
  private readonly maxClients: number;
  private keepAlive: NodeJS.Timeout | undefined;
  /** Clients dropped for reading too slowly since the start (tests, logs). */
  dropped = 0;

  constructor(
    private readonly bus: FeedBus,
    private readonly opts: FeedRouteOptions = {},
  ) {
    this.keepAliveMs = opts.keepAliveMs ?? FEED_KEEPALIVE_MS;
    this.maxUnsentBytes = opts.maxUnsentBytes ?? FEED_MAX_UNSENT_BYTES;
    this.maxClients = opts.maxClients ?? FEED_MAX_CLIENTS;
    opts.signal?.addEventListener('abort', () => this.close(), { once: true });
  }

  get size(): number {
    return this.clients.size;
  }

  open(res: ServerResponse, lastEventId: string | undefined, types: ReadonlySet<FeedEventType> | undefined): void {
    if (this.opts.signal?.aborted) return answer(res, 503, 'unavailable', 'the admin listener is stopping');
    if (this.clients.size >= this.maxClients) {
      return answer(
        res,
        503,
        'unavailable',
        `too many live feed clients (at most ${this.maxClients}); close one and retry`,
      );
    }
    const pos = this.bus.position(lastEventId);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      // nginx buffers responses by default: a feed behind it would arrive in lumps
      'x-accel-buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    let head = `retry: ${RETRY_MS}\n\n`;
    if (pos.kind === 'reset') {
      // No id: a reconnect after this still sends the client's last id, which resets again only if it is still unknown.
      head += `event: reset\ndata: ${JSON.stringify({ reason: pos.reason, lastEventId: this.bus.last ? this.bus.idOf(this.bus.last) : null })}\n\n`;
    }
    res.write(head);
    const client: Client = { res, next: pos.next, types };
    this.clients.add(client);
    res.once('close', () => this.remove(client));
    if (!this.unsubscribe) {
      this.unsubscribe = this.bus.subscribe(() => this.schedule());
      this.bus.addReaders(1);
    }
    if (!this.keepAlive) {
      this.keepAlive = setInterval(() => this.ping(), this.keepAliveMs);
      this.keepAlive.unref();
    }
    // A resume sends what was missed now (bounded by the ring buffer), then the client is live.
    if (client.next <= this.bus.last) this.schedule();
  }

  /** End every stream (the listener stops). */
  close(): void {
    for (const c of [...this.clients]) c.res.end();
    this.clients.clear();
    this.stopIfIdle();
  }

  private schedule(): void {
    if (!this.timer) this.timer = setTimeout(() => this.flush(), FEED_FLUSH_MS);
    // A burst: flush at the next turn rather than let the ring buffer wrap past a live client before the timer.
    else if (!this.early && ++this.sinceFlush >= FEED_FLUSH_EVENTS) this.early = setImmediate(() => this.flush());
  }

  private flush(): void {
    clearTimeout(this.timer);
    clearImmediate(this.early);
    this.timer = undefined;
    this.early = undefined;
    this.sinceFlush = 0;
    const last = this.bus.last;
    // Each frame is made once per flush, each chunk once per starting point: clients that are all live (the usual
    // case) share one string. Nothing is kept after the flush.
    const first = Math.max(this.bus.oldest, Math.min(last + 1, ...[...this.clients].map((c) => c.next)));
    const frames: (string | undefined)[] = [];
    const frame = (seq: number) => (frames[seq - first] ??= this.bus.frame(seq)!);
    const shared = new Map<number, string>();
    for (const c of this.clients) {
      if (c.next > last) continue;
      if (c.next < this.bus.oldest || c.res.writableLength > this.maxUnsentBytes) {
        this.drop(c);
        continue;
      }
      let chunk = c.types ? undefined : shared.get(c.next);
      if (chunk === undefined) {
        chunk = '';
        for (let seq = c.next; seq <= last; seq++) {
          if (c.types && !c.types.has(this.bus.at(seq)!.type)) continue;
          chunk += frame(seq);
        }
        if (!c.types) shared.set(c.next, chunk);
      }
      c.next = last + 1;
      // Checked before the write, not after: one flush may hold up to FEED_FLUSH_EVENTS events, more than the limit's
      // worth; a client is dropped when it has not taken the previous flushes in by the next one.
      if (chunk) c.res.write(chunk);
    }
  }

  private ping(): void {
    for (const c of this.clients) {
      if (c.res.writableLength > this.maxUnsentBytes) this.drop(c);
      else c.res.write(': keep-alive\n\n');
    }
  }

  /** A client that reads slower than events come: closed, so its backlog is freed and it cannot hold memory. */
  private drop(c: Client): void {
    this.dropped++;
    this.remove(c);
    this.opts.logger?.warn(
      { unsentBytes: c.res.writableLength, limit: this.maxUnsentBytes },
      'live feed client dropped: it reads slower than events come; it may reconnect with Last-Event-ID',
    );
    c.res.destroy();
  }

  private remove(c: Client): void {
    this.clients.delete(c);
    this.stopIfIdle();
  }

  private stopIfIdle(): void {
    if (this.clients.size) return;
    if (this.unsubscribe) this.bus.addReaders(-1);
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
    clearTimeout(this.timer);
    clearImmediate(this.early);
    this.timer = this.early = undefined;
    this.sinceFlush = 0;
  }
}

/** The live feed's route: `GET /api/v1/events[?types=run,delivery]`, admin token required. */
export function feedRoutes(bus: FeedBus, opts: FeedRouteOptions = {}): AdminRoute[] {
  const streams = new FeedStreams(bus, opts);
  return [
    {
      method: 'GET',
      path: FEED_PATH,
      handle({ req, res, query }) {
        const types = parseTypes(query.get('types'));
        if (types instanceof Error) return answer(res, 400, 'invalid_query', types.message);
        const header = req.headers['last-event-id'];
        streams.open(res, Array.isArray(header) ? header[0] : header, types);
      },
    },
  ];
}
