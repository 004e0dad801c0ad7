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
import { randomBytes, randomInt } from 'node:crypto';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { connect as tlsConnect } from 'node:tls';
import type { z } from 'zod';
import type { ircSchema } from '../config/schema/channels.js';
import { errorCode } from '../http-util.js';
import { logSafe } from '../text-safe.js';
import { ChannelError, type Channel, type ChannelContext, type OutboundMessage, type SendResult } from './types.js';

export type IrcConfig = z.output<typeof ircSchema>;

// ---------------------------------------------------------------------------------------------------------------
// Errors

/** A failed step, carrying how the outbox should treat the delivery. */
export class IrcError extends ChannelError {
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(retryable: boolean, message: string, retryAfterMs?: number) {
    super(retryable ? 'irc_unavailable' : 'irc_rejected', message);
    this.retryable = retryable;
    this.retryAfterMs = retryAfterMs;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Wire format

/** One IRC line, parsed. Message tags (IRCv3) are skipped: nothing here needs them. */
export interface IrcMessage {
  prefix?: string;
  command: string;
  params: string[];
}

export function parseIrcLine(line: string): IrcMessage | undefined {
  let i = 0;
  const n = line.length;
  const skipSpaces = () => {
    while (line[i] === ' ') i++;
  };
  if (line[i] === '@') {
    const sp = line.indexOf(' ', i);
    if (sp < 0) return undefined;
    i = sp + 1;
    skipSpaces();
  }
  let prefix: string | undefined;
  if (line[i] === ':') {
    const sp = line.indexOf(' ', i);
    if (sp < 0) return undefined;
    prefix = line.slice(i + 1, sp);
    i = sp + 1;
    skipSpaces();
  }
  let end = line.indexOf(' ', i);
  if (end < 0) end = n;
  const command = line.slice(i, end).toUpperCase();
  if (!command) return undefined;
  i = end;
  const params: string[] = [];
  while (i < n) {
    skipSpaces();
    if (i >= n) break;
    if (line[i] === ':') {
      params.push(line.slice(i + 1));
      break;
    }
    end = line.indexOf(' ', i);
    if (end < 0) end = n;
    params.push(line.slice(i, end));
    i = end;
  }
  return prefix === undefined ? { command, params } : { prefix, command, params };
}

/** The nick part of a `nick!user@host` prefix. */
function nickOf(prefix: string | undefined): string | undefined {
  return prefix?.split('!', 1)[0];
}

/** A full IRC line is at most 512 bytes including the trailing CR LF (RFC 2812 §2.3). */
export const IRC_LINE_BYTES = 512;
/** The server relays our PRIVMSG with `:nick!user@host ` in front; host names are at most 63 bytes (RFC 1123). */
const HOST_RESERVE = 63;
/** Idents are usually cut to 10 characters; the server may add `~` when it has no ident answer. */
const USER_RESERVE = 10;
/** Channel names are at most 50 characters (RFC 2812 §1.3): the target assumed for `maxTextLength`. */
const TARGET_RESERVE = 50;

const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');

/**
 * How many bytes of text fit one PRIVMSG so that the line the server relays to others,
 * `:<nick>!<user>@<host> PRIVMSG <target> :<text>\r\n`, stays within 512 bytes.
 */
export function privmsgTextBudget(nick: string, user: string, target: string): number {
  const prefix = 1 + byteLength(nick) + 1 + Math.max(byteLength(user) + 1, USER_RESERVE) + 1 + HOST_RESERVE + 1;
  return IRC_LINE_BYTES - prefix - 'PRIVMSG '.length - byteLength(target) - ' :'.length - '\r\n'.length;
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Splits a message into PRIVMSG texts: one per line (CR, LF and CR LF all end a line; blank lines are dropped, as
 * IRC cannot send an empty message), each at most `maxBytes` UTF-8 bytes. A longer line is cut at its last space
 * in the second half of the budget (the space itself is dropped), else between characters — never inside a UTF-8
 * sequence, and not inside a grapheme cluster (an emoji with modifiers) unless that cluster alone is too long.
 * NUL is removed (it would end the line on many servers).
 */
export function splitIrcText(text: string, maxBytes: number): string[] {
  if (!(maxBytes >= 4)) throw new RangeError(`an IRC line needs room for at least one character (got ${maxBytes} bytes)`);
  const out: string[] = [];
  for (const line of text.replace(/\0/g, '').split(/\r\n|\r|\n/)) {
    if (line.trim() === '') continue;
    if (byteLength(line) <= maxBytes) out.push(line);
    else splitLongLine(line, maxBytes, out);
  }
  return out;
}

function splitLongLine(line: string, maxBytes: number, out: string[]): void {
  let piece = '';
  let pieceBytes = 0;
  for (const { segment } of graphemes.segment(line)) {
    // A single grapheme over the budget (a pathological run of combining marks) is cut between code points.
    const units = byteLength(segment) > maxBytes ? [...segment] : [segment];
    for (const unit of units) {
      const b = byteLength(unit);
      while (piece !== '' && pieceBytes + b > maxBytes) {
        const space = piece.lastIndexOf(' ');
        if (space > 0 && byteLength(piece.slice(0, space)) * 2 >= maxBytes) {
          out.push(piece.slice(0, space));
          piece = piece.slice(space + 1);
        } else {
          out.push(piece);
          piece = '';
        }
        pieceBytes = byteLength(piece);
      }
      piece += unit;
      pieceBytes += b;
    }
  }
  if (piece.trim() !== '') out.push(piece);
}

/** A recipient must be one IRC parameter: no spaces, commas (a list of targets), or line breaks; not `:`-led. */
const TARGET_RE = /^[^\s,:\0\x07][^\s,\0\x07]{0,199}$/;

/** Every line we write is checked once more here: a CR or LF would let a value inject a command. */
function assertOneLine(line: string): void {
  if (/[\r\n\0]/.test(line)) throw new IrcError(false, 'refusing to send a line containing CR, LF or NUL');
}

// ---------------------------------------------------------------------------------------------------------------
// Flood control

/** A token bucket: `burst` lines at once, then one more every `intervalMs`. */
class FloodGate {
  private tokens: number;
  private last = Date.now();
  constructor(
    private readonly burst: number,
    private readonly intervalMs: number,
  ) {
    this.tokens = burst;
  }

  async take(signal?: AbortSignal): Promise<void> {
    if (this.intervalMs <= 0) return;
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + (now - this.last) / this.intervalMs);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(Math.ceil((1 - this.tokens) * this.intervalMs), signal);
    }
  }
}

async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleepFor(ms, undefined, signal ? { signal } : undefined);
  } catch {
    throw new IrcError(true, 'delivery aborted');
  }
}

// ---------------------------------------------------------------------------------------------------------------
// One connection

type Listener = (m: IrcMessage) => void;

/** The most a server may send without a line break before we give up on it (protects memory). */
const MAX_PENDING_BYTES = 64 * 1024;

class IrcConnection {
  nick: string;
  /** Channel prefixes (ISUPPORT CHANTYPES). */
  chantypes = '#&';
  private casemapping = 'rfc1459';
  /** Channels we are in, case-folded. */
  readonly joined = new Set<string>();
  closed = false;
  lastReceivedAt = Date.now();
  readonly flood: FloodGate;
  private closeReason = 'the server closed the connection';
  private pending: Buffer = Buffer.alloc(0);
  private readonly listeners = new Set<Listener>();
  private readonly closeListeners = new Set<(reason: string) => void>();
  private keepalive: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: Socket,
    nick: string,
    flood: FloodGate,
  ) {
    this.nick = nick;
    this.flood = flood;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => {
      this.closeReason = `connection error (${codeOf(err)})`;
    });
    socket.on('close', () => this.handleClose());
  }

  write(line: string): void {
    assertOneLine(line);
    if (!this.closed) this.socket.write(`${line}\r\n`);
  }

  /** Subscribes to every parsed line; returns the unsubscribe function. */
  on(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onClose(fn: (reason: string) => void): void {
    if (this.closed) fn(this.closeReason);
    else this.closeListeners.add(fn);
  }

  /** Case-folds a nick or channel name the way the server compares them (ISUPPORT CASEMAPPING). */
  fold(s: string): string {
    const lower = s.toLowerCase();
    if (this.casemapping === 'ascii') return lower;
    const folded = lower.replace(/\[/g, '{').replace(/\]/g, '}').replace(/\\/g, '|');
    return this.casemapping === 'strict-rfc1459' ? folded : folded.replace(/~/g, '^');
  }

  /** Closes at once: the connection counts as gone now, not when the socket's close event comes round. */
  destroy(reason: string): void {
    if (this.closed) return;
    this.closeReason = reason;
    this.socket.destroy();
    this.handleClose();
  }

  /** QUIT politely; the server answers ERROR and closes. Bounded, so a stuck server cannot hold up shutdown. */
  async quit(message: string): Promise<void> {
    if (this.closed) return;
    this.closeReason = 'closed by hookgate';
    const closed = new Promise<void>((resolve) => this.onClose(() => resolve()));
    this.write(`QUIT :${message}`);
    this.socket.end();
    const timer = setTimeout(() => this.socket.destroy(), 2000);
    await closed;
    clearTimeout(timer);
  }

  /** Probes the server when it has been silent for `idleMs`, and drops the connection if it stays silent. */
  startKeepalive(idleMs: number, deadMs: number): void {
    let probed = false;
    this.keepalive = setInterval(
      () => {
        const silent = Date.now() - this.lastReceivedAt;
        if (silent > idleMs + deadMs) this.destroy('the server stopped answering');
        else if (silent > idleMs && !probed) {
          probed = true;
          this.write(`PING :keepalive-${Date.now()}`);
        } else if (silent <= idleMs) probed = false;
      },
      Math.max(50, Math.min(idleMs, deadMs) / 2),
    );
    this.keepalive.unref();
  }

  /**
   * Resolves with the first non-undefined result of `pick` over incoming lines. `pick` may throw an IrcError to
   * fail the wait. Fails retryably when the connection closes, after `timeoutMs`, or when `signal` aborts.
   */
  waitFor<T>(pick: (m: IrcMessage) => T | undefined, timeoutMs: number, what: string, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = (fn: () => void) => {
        off();
        this.closeListeners.delete(onClose);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const off = this.on((m) => {
        try {
          const r = pick(m);
          if (r !== undefined) done(() => resolve(r));
        } catch (err) {
          done(() => reject(err));
        }
      });
      const onClose = (reason: string) => done(() => reject(new IrcError(true, `${what}: ${reason}`)));
      const onAbort = () => done(() => reject(new IrcError(true, `${what}: aborted`)));
      const timer = setTimeout(() => done(() => reject(new IrcError(true, `${what}: no answer within ${timeoutMs} ms`))), timeoutMs);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.closed) return onClose(this.closeReason);
      this.closeListeners.add(onClose);
    });
  }

  private onData(chunk: Buffer): void {
    this.lastReceivedAt = Date.now();
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let nl: number;
    while ((nl = this.pending.indexOf(0x0a)) >= 0) {
      const raw = this.pending.subarray(0, nl).toString('utf8').replace(/\r$/, '');
      this.pending = this.pending.subarray(nl + 1);
      const m = parseIrcLine(raw);
      if (m) this.dispatch(m);
      if (this.closed) return;
    }
    if (this.pending.length > MAX_PENDING_BYTES) this.destroy('the server sent an over-long line');
  }

  private dispatch(m: IrcMessage): void {
    // Book-keeping first, so that listeners see the state the line produced.
    const me = (prefix: string | undefined) => {
      const n = nickOf(prefix);
      return n !== undefined && this.fold(n) === this.fold(this.nick);
    };
    switch (m.command) {
      case 'PING':
        this.write(`PONG :${m.params[0] ?? ''}`);
        break;
      case '005':
        for (const token of m.params.slice(1, -1)) {
          const [key, value] = token.split('=', 2);
          if (key === 'CHANTYPES' && value) this.chantypes = value;
          if (key === 'CASEMAPPING' && value) this.casemapping = value.toLowerCase();
        }
        break;
      case 'NICK':
        if (me(m.prefix) && m.params[0]) this.nick = m.params[0];
        break;
      case 'JOIN':
        if (me(m.prefix) && m.params[0]) this.joined.add(this.fold(m.params[0]));
        break;
      case 'PART':
        if (me(m.prefix) && m.params[0]) this.joined.delete(this.fold(m.params[0]));
        break;
      case 'KICK':
        if (m.params[0] && m.params[1] && this.fold(m.params[1]) === this.fold(this.nick)) this.joined.delete(this.fold(m.params[0]));
        break;
      case 'ERROR':
        this.closeReason = `the server closed the connection: ${logSafe(m.params.at(-1) ?? '', SERVER_TEXT_MAX)}`;
        break;
    }
    for (const fn of [...this.listeners]) fn(m);
  }

  private handleClose(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.keepalive) clearInterval(this.keepalive);
    for (const fn of [...this.closeListeners]) fn(this.closeReason);
    this.closeListeners.clear();
    this.listeners.clear();
  }
}

/** Longest server-provided text (an ERROR line's reason) quoted in our errors. */
const SERVER_TEXT_MAX = 160;

/** A socket error's code (ECONNREFUSED, ERR_TLS_...) for messages: never its message. */
function codeOf(err: unknown): string {
  return errorCode(err) ?? 'unknown error';
}

// ---------------------------------------------------------------------------------------------------------------
// Connecting and registering

/** Certificate problems: retrying will not fix them, the configuration (or the server's certificate) must change. */
const TLS_CERT_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REVOKED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

function dial(cfg: IrcConfig, timeoutMs: number, signal: AbortSignal): Promise<Socket> {
  const where = `${cfg.host}:${cfg.port}`;
  return new Promise((resolve, reject) => {
    const socket: Socket = cfg.tls
      ? tlsConnect({
          host: cfg.host,
          port: cfg.port,
          // SNI takes a host name, never an address.
          ...(isIP(cfg.host) ? {} : { servername: cfg.host }),
          rejectUnauthorized: !cfg.tlsInsecure,
        })
      : netConnect({ host: cfg.host, port: cfg.port });
    const readyEvent = cfg.tls ? 'secureConnect' : 'connect';
    const cleanup = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      socket.off('error', onError);
      socket.off(readyEvent, onReady);
    };
    const fail = (err: IrcError) => {
      cleanup();
      socket.destroy();
      reject(err);
    };
    const onError = (err: Error) => {
      const code = codeOf(err);
      if (TLS_CERT_ERRORS.has(code)) {
        fail(new IrcError(false, `the TLS certificate of ${where} was not accepted (${code}); for a self-signed server on a private network set tlsInsecure: true`));
      } else if (/^ERR_SSL|^EPROTO$/.test(code)) {
        fail(new IrcError(false, `TLS handshake with ${where} failed (${code}); is ${cfg.port} a TLS port? (set tls: false for a plain-text port)`));
      } else fail(new IrcError(true, `cannot connect to ${where} (${code})`));
    };
    const onReady = () => {
      cleanup();
      // Until the connection object attaches its own handler, an error must not go unhandled (it would crash).
      socket.on('error', () => undefined);
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 60_000);
      resolve(socket);
    };
    const onAbort = () => fail(new IrcError(true, 'connection attempt aborted'));
    // A plain-text server says nothing to a TLS ClientHello: with TLS on, a silent port is most often that.
    const hint = cfg.tls ? '; if this is a plain-text port, set tls: false' : '';
    const timer = setTimeout(() => fail(new IrcError(true, `cannot connect to ${where} (no answer within ${timeoutMs} ms${hint})`)), timeoutMs);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    socket.once('error', onError);
    socket.once(readyEvent, onReady);
  });
}

/** The nick, then variants for when it is taken (433): `nick_`, `nick__`, then shortened with random digits. */
export function alternateNicks(nick: string): string[] {
  const digits = (n: number) => String(randomInt(10 ** (n - 1), 10 ** n));
  return [nick, `${nick}_`, `${nick}__`, `${nick.slice(0, 7)}${digits(2)}`, `${nick.slice(0, 6)}${digits(3)}`, `${nick.slice(0, 5)}${digits(4)}`];
}

/** SASL numerics that end the exchange with a failure (IRCv3 sasl-3.1). */
const SASL_FAILURES: Record<string, string> = {
  '902': 'the account is locked (902)',
  '904': 'the account name or password was rejected (904)',
  '905': 'the credentials are too long (905)',
  '906': 'authentication was aborted (906)',
  '907': 'already authenticated (907)',
  '908': 'the server does not offer PLAIN (908)',
};

/** PASS, CAP/SASL, NICK, USER, up to RPL_WELCOME (001). Throws IrcError. */
async function register(conn: IrcConnection, cfg: IrcConfig, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const nicks = alternateNicks(cfg.nick);
  let nickIndex = 0;
  const sasl = cfg.saslPassword !== undefined;
  let saslDone = false;
  let capLs = '';

  if (sasl) conn.write('CAP LS 302');
  if (cfg.password !== undefined) conn.write(`PASS :${cfg.password}`);
  conn.write(`NICK ${cfg.nick}`);
  conn.write(`USER ${cfg.username ?? cfg.nick} 0 * :${cfg.realname ?? 'hookgate'}`);

  const fatal = (why: string) => new IrcError(false, `IRC registration failed: ${why}`);
  const nextNick = () => {
    nickIndex++;
    const next = nicks[nickIndex];
    if (next === undefined) throw new IrcError(true, `IRC registration failed: the nick ${cfg.nick} and its alternatives are in use`);
    conn.nick = next;
    conn.write(`NICK ${next}`);
  };

  await conn.waitFor(
    (m) => {
      switch (m.command) {
        case '001':
          if (sasl && !saslDone) throw fatal('the server does not support SASL, but saslPassword is set');
          conn.nick = m.params[0] ?? conn.nick;
          return true;
        case '433': // ERR_NICKNAMEINUSE
        case '436': // ERR_NICKCOLLISION
        case '437': // ERR_UNAVAILRESOURCE (nick delay)
          nextNick();
          return undefined;
        case '432': // ERR_ERRONEUSNICKNAME: our own nick is a config error; an alternative may just be too long
          if (nickIndex === 0) throw fatal(`the server does not accept the nick ${cfg.nick} (432)`);
          nextNick();
          return undefined;
        case '464':
          throw fatal('the server password was rejected (464)');
        case '465':
          throw fatal('this client is banned from the server (465)');
        case 'ERROR': {
          const why = logSafe(m.params.at(-1) ?? '', SERVER_TEXT_MAX);
          // Some servers (ngircd) answer a wrong PASS with just ERROR "... Bad password": that needs a config change.
          if (cfg.password !== undefined && /password/i.test(why)) throw fatal(`the server password was rejected (${why})`);
          throw new IrcError(true, `IRC registration failed: the server closed the connection: ${why}`);
        }
        case '421': // ERR_UNKNOWNCOMMAND: a server without CAP cannot do SASL
          if (sasl && m.params[1]?.toUpperCase() === 'CAP') throw fatal('the server does not support CAP/SASL, but saslPassword is set');
          return undefined;
        case 'CAP': {
          const sub = m.params[1]?.toUpperCase();
          if (sub === 'LS') {
            // `CAP * LS * :caps` continues on the next line (CAP 302); `CAP * LS :caps` is the last one.
            const more = m.params.length >= 4 && m.params[2] === '*';
            capLs += ` ${m.params.at(-1) ?? ''}`;
            if (more) return undefined;
            const cap = capLs.split(' ').find((c) => c === 'sasl' || c.startsWith('sasl='));
            if (!cap) throw fatal('the server does not offer SASL (no sasl capability), but saslPassword is set');
            const mechs = cap.includes('=') ? cap.slice(5).split(',') : undefined;
            if (mechs && !mechs.map((x) => x.toUpperCase()).includes('PLAIN')) throw fatal('the server does not offer SASL PLAIN');
            conn.write('CAP REQ :sasl');
          } else if (sub === 'ACK' && /(^|\s)sasl(\s|$)/.test(m.params.at(-1) ?? '')) {
            conn.write('AUTHENTICATE PLAIN');
          } else if (sub === 'NAK') {
            throw fatal('the server refused the sasl capability');
          }
          return undefined;
        }
        case 'AUTHENTICATE':
          if (m.params[0] === '+' && sasl) {
            const account = cfg.saslUsername ?? cfg.nick;
            // RFC 4616: authzid NUL authcid NUL password; base64 sent in chunks of 400, a full last chunk followed by "+".
            const payload = Buffer.from(`${account}\0${account}\0${cfg.saslPassword ?? ''}`, 'utf8').toString('base64');
            for (let i = 0; i < payload.length; i += 400) conn.write(`AUTHENTICATE ${payload.slice(i, i + 400)}`);
            if (payload.length % 400 === 0) conn.write('AUTHENTICATE +');
          }
          return undefined;
        case '903': // RPL_SASLSUCCESS
          saslDone = true;
          conn.write('CAP END');
          return undefined;
        default: {
          const failure = SASL_FAILURES[m.command];
          if (failure && sasl) throw fatal(`SASL: ${failure}`);
          return undefined;
        }
      }
    },
    timeoutMs,
    'registering with the IRC server',
    signal,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Delivery errors

/** ERR_* numerics about a PRIVMSG or JOIN that may clear by themselves. Every other error numeric is permanent. */
const RETRYABLE_NUMERICS = new Set(['437', '439', '471']);

const NUMERIC_MEANING: Record<string, string> = {
  '401': 'no such nick or channel',
  '403': 'no such channel',
  '404': 'cannot send to the channel (moderated, banned, or messages from outside not allowed)',
  '405': 'joined too many channels',
  '407': 'too many targets',
  '411': 'no recipient',
  '412': 'no text to send',
  '437': 'the channel is temporarily unavailable',
  '439': 'sending to new targets too fast',
  '471': 'the channel is full',
  '473': 'the channel is invite-only',
  '474': 'banned from the channel',
  '475': 'wrong or missing channel key (set channelKeys)',
  '476': 'bad channel name',
  '477': 'the channel or recipient requires a registered nick',
};

function isErrorNumeric(m: IrcMessage): boolean {
  return /^[45]\d\d$/.test(m.command);
}

function numericError(m: IrcMessage, target: string): IrcError {
  // The server's own wording is left out: some servers quote the refused line back, and that is message text.
  const meaning = NUMERIC_MEANING[m.command] ?? 'error numeric';
  return new IrcError(RETRYABLE_NUMERICS.has(m.command), `IRC server refused ${target}: ${meaning} (${m.command})`);
}

// ---------------------------------------------------------------------------------------------------------------
// The channel

export interface IrcChannelOptions {
  /** First reconnect delay after a drop or failure; doubles per failure (default 1 s). */
  reconnectBaseMs?: number;
  /** Reconnect delay cap (default 60 s). */
  reconnectMaxMs?: number;
  /** Silence after which the server is probed with a PING (default 120 s); no answer within `timeoutMs` drops it. */
  keepaliveIdleMs?: number;
}

/** The IRC channel; `close()` sends QUIT and stops reconnecting. */
export interface IrcChannel extends Channel {
  close(): Promise<void>;
  /** Whether a registered connection is open now (for health reporting and tests). */
  readonly connected: boolean;
}

export function createIrcChannel(config: IrcConfig, ctx: ChannelContext, options: IrcChannelOptions = {}): IrcChannel {
  return new IrcClient(config, ctx, options);
}

class IrcClient implements IrcChannel {
  readonly id = 'irc';
  /**
   * In characters, for the outbox's split: a chunk this long of single-byte text fits one PRIVMSG line to a target
   * of up to 50 characters, whatever alternative nick we end up with. Multi-byte text is split further by bytes.
   */
  readonly maxTextLength: number;
  private readonly user: string;
  private conn: IrcConnection | undefined;
  private connecting: Promise<IrcConnection> | undefined;
  /** No connection attempt before this time (backoff). */
  private retryAt = 0;
  private failures = 0;
  /** The last attempt failed in a way retrying cannot fix: repeated to sends until the backoff has passed. */
  private lastFatal: IrcError | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** Set by the first delivery: from then on a dropped connection is re-established in the background. */
  private wanted = false;
  private closedFlag = false;
  private readonly lifetime = new AbortController();
  /** Deliveries run one at a time, so an error numeric can be attributed to the delivery that caused it. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cfg: IrcConfig,
    private readonly ctx: ChannelContext,
    private readonly options: IrcChannelOptions,
  ) {
    this.user = cfg.username ?? cfg.nick;
    // The longest alternative nick is the nick plus two characters, or nine (the shortened ones with digits).
    const longestNick = 'x'.repeat(Math.max(cfg.nick.length + 2, 9));
    this.maxTextLength = Math.max(1, privmsgTextBudget(longestNick, this.user, 'x'.repeat(TARGET_RESERVE)));
  }

  get connected(): boolean {
    return this.conn !== undefined && !this.conn.closed;
  }

  send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
    const run = this.queue.then(() => this.deliver(message, signal));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.lifetime.abort();
    clearTimeout(this.reconnectTimer);
    await this.connecting?.catch(() => undefined);
    const conn = this.conn;
    this.conn = undefined;
    if (conn) await conn.quit('hookgate shutting down');
  }

  private async deliver(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
    try {
      const target = message.to;
      if (!TARGET_RE.test(target)) {
        throw new IrcError(false, 'invalid IRC recipient: `to` must be a #channel or a nick, without spaces or commas');
      }
      if (signal?.aborted) throw new IrcError(true, 'delivery aborted');
      this.wanted = true;
      const conn = await this.acquire(signal);
      if (conn.chantypes.includes(target[0] ?? '') && !conn.joined.has(conn.fold(target))) await this.join(conn, target, signal);
      const lines = splitIrcText(message.text, privmsgTextBudget(conn.nick, this.user, target));
      if (lines.length === 0) return { ok: true };
      await this.sendLines(conn, target, lines, signal);
      return { ok: true };
    } catch (err) {
      if (err instanceof IrcError) {
        return { ok: false, retryable: err.retryable, error: err.message, ...(err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}) };
      }
      this.ctx.logger.error({ channel: 'irc', err: codeOf(err) }, 'irc delivery failed unexpectedly');
      return { ok: false, retryable: true, error: 'IRC delivery failed unexpectedly' };
    }
  }

  /** PRIVMSG each line (flood-controlled), then PING and wait for the PONG: see "What delivered means" above. */
  private async sendLines(conn: IrcConnection, target: string, lines: string[], signal?: AbortSignal): Promise<void> {
    const errors: IrcMessage[] = [];
    const off = conn.on((m) => {
      if (isErrorNumeric(m)) errors.push(m);
    });
    try {
      for (let i = 0; i < lines.length; i++) {
        await conn.flood.take(signal);
        if (conn.closed) throw new IrcError(true, `the IRC connection dropped after ${i} of ${lines.length} lines`);
        conn.write(`PRIVMSG ${target} :${lines[i]}`);
      }
      const token = `hookgate-${randomBytes(6).toString('hex')}`;
      conn.write(`PING :${token}`);
      try {
        await conn.waitFor(
          (m) => (m.command === 'PONG' && m.params.at(-1) === token ? true : undefined),
          this.cfg.timeoutMs,
          'waiting for the IRC server to confirm the message (some lines may have been delivered)',
          signal,
        );
      } catch (err) {
        // A server that does not answer a PING is stuck: start over on a fresh connection.
        if (!signal?.aborted) conn.destroy('the server did not answer a PING');
        throw err;
      }
    } finally {
      off();
    }
    const first = errors[0];
    if (first) throw numericError(first, target);
  }

  private async join(conn: IrcConnection, channel: string, signal?: AbortSignal): Promise<void> {
    const folded = conn.fold(channel);
    const key = Object.entries(this.cfg.channelKeys ?? {}).find(([name]) => conn.fold(name) === folded)?.[1];
    await conn.flood.take(signal);
    conn.write(key === undefined ? `JOIN ${channel}` : `JOIN ${channel} ${key}`);
    await conn.waitFor(
      (m) => {
        if (m.command === 'JOIN' && conn.fold(nickOf(m.prefix) ?? '') === conn.fold(conn.nick) && conn.fold(m.params[0] ?? '') === folded) return true;
        if (isErrorNumeric(m) && conn.fold(m.params[1] ?? '') === folded) throw numericError(m, channel);
        return undefined;
      },
      this.cfg.timeoutMs,
      `joining ${channel}`,
      signal,
    );
  }

  /** A registered connection: the open one, the attempt in progress, or a new attempt once the backoff allows. */
  private async acquire(signal?: AbortSignal): Promise<IrcConnection> {
    for (;;) {
      if (this.closedFlag) throw new IrcError(true, 'the IRC channel is closed');
      if (this.conn && !this.conn.closed) return this.conn;
      if (!this.connecting) {
        const wait = this.retryAt - Date.now();
        if (wait > 0) {
          if (this.lastFatal) throw this.lastFatal;
          if (wait > this.cfg.timeoutMs) {
            throw new IrcError(true, `not connected to the IRC server; next attempt in ${Math.ceil(wait / 1000)} s`, wait);
          }
          await sleep(wait, signal);
          continue;
        }
        void this.startConnect();
      }
      const attempt = this.connecting;
      if (attempt) await raceAbort(attempt, signal);
    }
  }

  private startConnect(): Promise<IrcConnection> {
    if (this.connecting) return this.connecting;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const attempt = this.openConnection().then(
      (conn) => {
        if (this.closedFlag) {
          void conn.quit('hookgate shutting down');
          throw new IrcError(true, 'the IRC channel is closed');
        }
        this.conn = conn;
        this.failures = 0;
        this.retryAt = 0;
        this.lastFatal = undefined;
        conn.onClose((reason) => this.onDrop(conn, reason));
        return conn;
      },
      (err: unknown) => {
        const e = err instanceof IrcError ? err : new IrcError(true, `IRC connection failed (${codeOf(err)})`);
        this.failures++;
        const delay = this.backoff(this.failures);
        this.lastFatal = e.retryable ? undefined : e;
        if (!this.closedFlag) {
          this.ctx.logger.warn({ channel: 'irc', error: e.message, retryInMs: delay }, 'irc connection failed');
          // Fatal failures (bad password, rejected certificate) are not retried in the background: only a new
          // delivery, after the backoff, tries again.
          if (e.retryable && this.wanted) this.scheduleReconnect(delay);
          else this.retryAt = Date.now() + delay;
        }
        throw e;
      },
    );
    const tracked = attempt.finally(() => {
      this.connecting = undefined;
    });
    tracked.catch(() => undefined);
    this.connecting = tracked;
    return tracked;
  }

  private async openConnection(): Promise<IrcConnection> {
    const signal = this.lifetime.signal;
    const socket = await dial(this.cfg, this.cfg.timeoutMs, signal);
    const conn = new IrcConnection(socket, this.cfg.nick, new FloodGate(this.cfg.floodBurst, this.cfg.floodIntervalMs));
    try {
      await register(conn, this.cfg, this.cfg.timeoutMs, signal);
    } catch (err) {
      conn.destroy('registration failed');
      throw err;
    }
    conn.startKeepalive(this.options.keepaliveIdleMs ?? 120_000, this.cfg.timeoutMs);
    this.ctx.logger.info({ channel: 'irc', host: this.cfg.host, port: this.cfg.port, tls: this.cfg.tls, nick: conn.nick }, 'irc connected');
    return conn;
  }

  private onDrop(conn: IrcConnection, reason: string): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    if (this.closedFlag) return;
    this.ctx.logger.warn({ channel: 'irc', reason }, 'irc connection lost; reconnecting');
    this.scheduleReconnect(this.backoff(0));
  }

  private scheduleReconnect(delayMs: number): void {
    clearTimeout(this.reconnectTimer);
    this.retryAt = Date.now() + delayMs;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.startConnect().catch(() => undefined);
    }, delayMs);
    // A pending reconnect alone does not keep the process alive.
    this.reconnectTimer.unref();
  }

  /** Exponential backoff with ±20 % jitter, so several hookgate nodes do not reconnect in lockstep. */
  private backoff(failures: number): number {
    const base = this.options.reconnectBaseMs ?? 1000;
    const max = this.options.reconnectMaxMs ?? 60_000;
    const raw = Math.min(max, base * 2 ** Math.max(0, failures - 1));
    return Math.round(raw * (0.8 + Math.random() * 0.4));
  }
}

function raceAbort<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new IrcError(true, 'delivery aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new IrcError(true, 'delivery aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
