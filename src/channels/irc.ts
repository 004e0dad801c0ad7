/**
 * Core channel `irc`: a small IRC client (RFC 1459/2812 plus IRCv3 CAP + SASL PLAIN) over TCP or TLS.
 *
 * - The connection is opened on the first delivery and then kept open between deliveries (answering the server's
 *   PINGs, probing it when idle). When it drops, it is re-established in the background with exponential backoff.
 * - `to` is a channel (`#ops`: joined before the first message, with `channelKeys[#ops]` if set) or a nick.
 * - Each line of the text is one PRIVMSG. A line too long for the 512-byte IRC line (which the server relays with our
 *   `:nick!user@host` prefix in front) is split by bytes, at a space when there is one in the second half.
 * - Flood control: `floodBurst` lines back to back, then one line per `floodIntervalMs`.
 * - Authentication: `password` is sent as PASS; `saslPassword` enables SASL PLAIN (the account is `saslUsername`,
 *   default the nick). SASL rather than a NickServ IDENTIFY message: the account is logged in before registration
 *   completes (so no line is ever sent unauthenticated), the server tells us whether it worked (903/904), and the
 *   password never travels as a PRIVMSG to a services bot that might be impersonated.
 *
 * What "delivered" means: IRC has no per-message acknowledgement. After the last PRIVMSG we send `PING :<token>`;
 * a server processes one client's lines in order, so its `PONG <token>` says it has processed every line before it.
 * An error numeric about our lines before that PONG (401 no such nick, 404 cannot send to channel, ...) makes the
 * delivery fail permanently; no PONG within `timeoutMs`, or a dropped connection, makes it fail retryably — and as
 * some lines may already have reached the channel, a retry can repeat them (at-least-once, like the outbox).
 */
export {
  checkIrcRecipient,
  IrcError,
  IRC_LINE_BYTES,
  type IrcConfig,
  type IrcMessage,
  parseIrcLine,
  privmsgTextBudget,
  splitIrcText,
} from './irc/protocol.js';
export { alternateNicks } from './irc/register.js';
export { createIrcChannel, type IrcChannel, type IrcChannelOptions } from './irc/channel.js';
