// An example hookgate channel plugin: delivers replies to Matrix rooms through the client-server API.
//
// Use it: copy this file next to your config (plugins must live inside the config file's directory) and list it:
//
//   channels: { plugins: ["./channels/matrix.mjs"] }
//
// then send with `channel: "matrix"` and `to` = a room id (`!abc123:example.org`) or a room alias
// (`#ops:example.org`, resolved once and cached). Configure it with environment variables:
//
//   MATRIX_HOMESERVER_URL   https://matrix.example.org   (required; the client-server API base)
//   MATRIX_ACCESS_TOKEN     the bot account's access token (required; never logged)
//   MATRIX_MSGTYPE          m.notice (default: bots conventionally post notices, which other bots ignore) or m.text
//   MATRIX_CHANNEL_ID       the channel id to register (default "matrix")
//   MATRIX_TIMEOUT_MS       per-request timeout (default 15000)
//
// The plugin contract (see docs/channels-extensions.md): default-export a Channel object, or a factory
// `(ctx) => Channel | Promise<Channel>` as here. A Channel is `{ id, maxTextLength, send(message, signal), close? }`;
// `send` resolves to `{ ok: true, platformIds? }` or `{ ok: false, retryable, retryAfterMs?, error, status? }` and
// never throws. Errors must not contain secrets or the message text.

/** @typedef {import('../../src/channels/types.ts').Channel} Channel */
/** @typedef {import('../../src/channels/types.ts').ChannelContext} ChannelContext */
/** @typedef {import('../../src/channels/types.ts').OutboundMessage} OutboundMessage */
/** @typedef {import('../../src/channels/types.ts').SendResult} SendResult */

/**
 * @param {ChannelContext} ctx
 * @returns {Channel}
 */
export default function createMatrixChannel(ctx) {
  const env = process.env;
  const homeserver = env.MATRIX_HOMESERVER_URL?.replace(/\/+$/, '');
  const token = env.MATRIX_ACCESS_TOKEN;
  if (!homeserver || !/^https?:\/\//.test(homeserver))
    throw new Error('MATRIX_HOMESERVER_URL must be set to the homeserver URL (https://...)');
  if (!token) throw new Error('MATRIX_ACCESS_TOKEN must be set');
  const msgtype = env.MATRIX_MSGTYPE ?? 'm.notice';
  if (msgtype !== 'm.notice' && msgtype !== 'm.text') throw new Error('MATRIX_MSGTYPE must be m.notice or m.text');
  const id = env.MATRIX_CHANNEL_ID ?? 'matrix';
  const timeoutMs = Number(env.MATRIX_TIMEOUT_MS ?? 15000);
  /** Room aliases resolved to room ids. */
  const rooms = new Map();

  /**
   * One API call. Resolves to the parsed JSON body on 2xx, or to a failed SendResult.
   * @returns {Promise<{ ok: true, body: any } | { ok: false, result: SendResult }>}
   */
  async function call(method, path, body, signal) {
    const timeout = AbortSignal.timeout(timeoutMs);
    let res;
    try {
      res = await fetch(`${homeserver}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      const why = timeout.aborted
        ? `no answer within ${timeoutMs} ms`
        : `network error (${err?.cause?.code ?? err?.name ?? 'error'})`;
      return { ok: false, result: { ok: false, retryable: true, error: `matrix: ${why}` } };
    }
    const json = await res.json().catch(() => ({}));
    if (res.ok) return { ok: true, body: json };
    // Matrix errors carry a machine code (M_FORBIDDEN, M_LIMIT_EXCEEDED...) — safe to report, unlike free text.
    const errcode = typeof json?.errcode === 'string' ? json.errcode : 'unknown';
    const status = res.status;
    const retryable = status === 429 || status >= 500;
    const headerSeconds = Number(res.headers.get('retry-after'));
    const retryAfterMs =
      typeof json?.retry_after_ms === 'number'
        ? json.retry_after_ms
        : Number.isFinite(headerSeconds) && headerSeconds > 0
          ? headerSeconds * 1000
          : undefined;
    return {
      ok: false,
      result: {
        ok: false,
        retryable,
        status,
        error: `matrix answered ${status} ${errcode}`,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      },
    };
  }

  /** `!room:server` as is; `#alias:server` through the room directory, cached. */
  async function roomId(to, signal) {
    if (to.startsWith('!')) return { ok: true, roomId: to };
    if (!to.startsWith('#'))
      return {
        ok: false,
        result: { ok: false, retryable: false, error: 'matrix: `to` must be a room id (!...) or alias (#...)' },
      };
    const cached = rooms.get(to);
    if (cached) return { ok: true, roomId: cached };
    const r = await call('GET', `/_matrix/client/v3/directory/room/${encodeURIComponent(to)}`, undefined, signal);
    if (!r.ok) return r;
    if (typeof r.body?.room_id !== 'string')
      return { ok: false, result: { ok: false, retryable: true, error: 'matrix: alias lookup returned no room_id' } };
    rooms.set(to, r.body.room_id);
    return { ok: true, roomId: r.body.room_id };
  }

  return {
    id,
    // A Matrix event may be at most 65536 bytes of JSON; 15000 characters stay below it even at 4 bytes each.
    maxTextLength: 15000,
    /**
     * @param {OutboundMessage} message
     * @param {AbortSignal} [signal]
     * @returns {Promise<SendResult>}
     */
    async send(message, signal) {
      const room = await roomId(message.to, signal);
      if (!room.ok) return room.result;
      // The delivery id is the transaction id: the homeserver de-duplicates a retried PUT with the same one.
      const path = `/_matrix/client/v3/rooms/${encodeURIComponent(room.roomId)}/send/m.room.message/${encodeURIComponent(message.deliveryId)}`;
      const r = await call('PUT', path, { msgtype, body: message.text }, signal);
      if (!r.ok) return r.result;
      ctx.logger.info({ channel: id, room: room.roomId }, 'matrix message sent');
      return { ok: true, platformIds: typeof r.body?.event_id === 'string' ? [r.body.event_id] : [] };
    },
  };
}
