/** Where a reply goes. Pure: the caller supplies the main session's last route and `channels.default`. */
export interface Route {
  channel: string;
  to: string;
  /** The sender named the channel (and recipient): a successful delivery makes it the main session's last route. */
  explicit: boolean;
}

export interface RouteInputs {
  /** `last` or a channel id (already validated when the request was accepted). */
  channel: string;
  to: string | null;
  lastRoute: { channel: string; to: string } | undefined;
  defaultRoute: { channel: string; to?: string | undefined } | undefined;
}

/**
 * `channel`/`to` explicit win; `last` is the main session's last route, else `channels.default`; else there is no
 * route (the caller records the reply as delivered nowhere, reason `no_route`). An explicit channel without `to`
 * borrows the recipient of the last route or the default when they are on the same channel.
 */
export function resolveRoute(r: RouteInputs): Route | undefined {
  if (r.channel !== 'last') {
    const to = r.to ?? (r.lastRoute?.channel === r.channel ? r.lastRoute.to : r.defaultRoute?.channel === r.channel ? r.defaultRoute.to : undefined);
    return { channel: r.channel, to: to ?? '', explicit: r.to !== null };
  }
  const base = r.lastRoute ?? (r.defaultRoute ? { channel: r.defaultRoute.channel, to: r.defaultRoute.to ?? '' } : undefined);
  if (!base) return undefined;
  return { channel: base.channel, to: r.to ?? base.to, explicit: false };
}
