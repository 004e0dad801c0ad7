import type { SessionRoute } from '../store/types.js';

/** Where a reply goes. Pure: the caller supplies the main session's route and `channels.default`. */
export interface Route extends SessionRoute {
  /** The sender named the channel and recipient (recorded on the delivery; it never moves a session's route). */
  explicit: boolean;
}

export interface RouteInputs {
  /** `last` or a channel id (already validated when the request was accepted). */
  channel: string;
  to: string | null;
  /** The run's account of `channel` (null: default). Requests pair it with an explicit channel, never with `last`. */
  accountId: string | null;
  lastRoute: SessionRoute | undefined;
  defaultRoute: { channel: string; to?: string | undefined } | undefined;
}

/**
 * Whether `resolveRoute` reads `lastRoute` for a run that asked for `channel` and `to`: not when both are explicit
 * (its first case), so the caller need not read the main session's route from the store for it (a query per run, a
 * round trip on PostgreSQL).
 */
export function readsLastRoute(r: Pick<RouteInputs, 'channel' | 'to'>): boolean {
  return r.channel === 'last' || r.to === null;
}

/**
 * `channel`/`to` explicit win; `last` is the main session's route (through its account), else
 * `channels.default` (its default account); else there is no route (the caller records the reply as delivered
 * nowhere, reason `no_route`). An explicit channel without `to` borrows the recipient of that route or the
 * default when they are on the same channel; a recipient borrowed from the route brings its account along
 * unless the run named one (that chat was reached through that account).
 */
export function resolveRoute(r: RouteInputs): Route | undefined {
  if (r.channel !== 'last') {
    if (r.to !== null) return { channel: r.channel, to: r.to, accountId: r.accountId, explicit: true };
    const last = r.lastRoute?.channel === r.channel ? r.lastRoute : undefined;
    const to = last ? last.to : r.defaultRoute?.channel === r.channel ? r.defaultRoute.to : undefined;
    return { channel: r.channel, to: to ?? '', accountId: r.accountId ?? last?.accountId ?? null, explicit: false };
  }
  const base =
    r.lastRoute ??
    (r.defaultRoute ? { channel: r.defaultRoute.channel, to: r.defaultRoute.to ?? '', accountId: null } : undefined);
  if (!base) return undefined;
  return { channel: base.channel, to: r.to ?? base.to, accountId: r.accountId ?? base.accountId, explicit: false };
}
