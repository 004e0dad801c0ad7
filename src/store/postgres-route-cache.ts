/**
 * The sessions' routes as this node last read them (the run worker asks for the main session's route once per run
 * with a reply to deliver, the heartbeat once per turn). A route changes only through `setRoute`, whose statement
 * sends a `route` notice in its own transaction; a kept route is forgotten when that notice arrives, so a node uses a
 * new route from the moment it learns of the commit, as it would by reading it.
 *
 * Kept only while this node's LISTEN connection listens: a lost connection may have lost a notice, so everything kept
 * is forgotten when it drops and again when it listens anew, and nothing is kept in between (every call reads). A
 * read that was under way when a notice (or a change of connection) came is used but not kept: it may predate the
 * change. A kept route is read again after `ROUTE_KEEP_MS` all the same, so a connection that died without a word
 * (no error, no end: a half-open socket) cannot keep an old route in use for longer.
 */
import type { SessionRoute } from './types.js';

export const ROUTE_KEEP_MS = 5000;
/** Session keys kept at most (routes are read for the main session and for sessions with heartbeats). */
const MAX_KEPT = 1000;

export class PgRouteCache {
  /** key → the route (null: none), and when it was read. */
  private readonly kept = new Map<string, { route: SessionRoute | null; at: number }>();
  /** Bumped by every forget: a read that began before it is not kept. */
  private epoch = 0;
  private listening = false;

  constructor(private readonly clock: () => number = () => performance.now()) {}

  /** LISTEN is in place (true) or its connection is gone (false): forget everything either way. */
  setListening(on: boolean): void {
    this.listening = on;
    this.forget();
  }

  /** A route changed (`key`), or any may have (no key). */
  forget(key?: string): void {
    this.epoch++;
    if (key === undefined) this.kept.clear();
    else this.kept.delete(key);
  }

  async get(key: string, read: (key: string) => Promise<SessionRoute | undefined>): Promise<SessionRoute | undefined> {
    const k = this.kept.get(key);
    if (k && this.clock() - k.at < ROUTE_KEEP_MS) return k.route ?? undefined;
    const epoch = this.epoch;
    const at = this.clock();
    const route = await read(key);
    if (this.listening && epoch === this.epoch) {
      if (this.kept.size >= MAX_KEPT && !this.kept.has(key)) this.kept.clear();
      this.kept.set(key, { route: route ? Object.freeze(route) : null, at });
    }
    return route;
  }
}
