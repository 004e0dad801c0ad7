/** IRC wire format: the channel's errors, parsing a line, byte budgets and splitting text into PRIVMSG lines, error numerics. */
import type { z } from 'zod';
import type { ircSchema } from '../../config/schema/channels.js';
import { ChannelError } from '../types.js';

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
export function nickOf(prefix: string | undefined): string | undefined {
  return prefix?.split('!', 1)[0];
}

/** A full IRC line is at most 512 bytes including the trailing CR LF (RFC 2812 section 2.3). */
export const IRC_LINE_BYTES = 512;
/** The server relays our PRIVMSG with `:nick!user@host ` in front; host names are at most 63 bytes (RFC 1123). */
const HOST_RESERVE = 63;
/** Idents are usually cut to 10 characters; the server may add `~` when it has no ident answer. */
const USER_RESERVE = 10;
/** Channel names are at most 50 characters (RFC 2812 section 1.3): the target assumed for `maxTextLength`. */
export const TARGET_RESERVE = 50;

const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');

/**
 * How many bytes of text fit one PRIVMSG so that the line the server relays to others,
 * `:<nick>!<user>@<host> PRIVMSG <target> :<text>\r\n`, stays within 512 bytes.
 */
export function privmsgTextBudget(nick: string, user: string, target: string): number {
  const prefix = 1 + byteLength(nick) + 1 + Math.max(byteLength(user) + 1, USER_RESERVE) + 1 + HOST_RESERVE + 1;
  return IRC_LINE_BYTES - prefix - 'PRIVMSG '.length - byteLength(target) - ' :'.length - '\r\n'.length;
}

// Made on first use: an Intl.Segmenter pages in ICU data that stays resident for the process's life.
let graphemes: Intl.Segmenter | undefined;

/**
 * Splits a message into PRIVMSG texts: one per line (CR, LF and CR LF all end a line; blank lines are dropped, as
 * IRC cannot send an empty message), each at most `maxBytes` UTF-8 bytes. A longer line is cut at its last space
 * in the second half of the budget (the space itself is dropped), else between characters — never inside a UTF-8
 * sequence, and not inside a grapheme cluster (an emoji with modifiers) unless that cluster alone is too long.
 * NUL is removed (it would end the line on many servers).
 */
export function splitIrcText(text: string, maxBytes: number): string[] {
  if (!(maxBytes >= 4))
    throw new RangeError(`an IRC line needs room for at least one character (got ${maxBytes} bytes)`);
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
  for (const { segment } of (graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' })).segment(line)) {
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

/** `to`: a #channel or a nick, one IRC parameter ({@link TARGET_RE}). */
export function checkIrcRecipient(to: string): string | undefined {
  return TARGET_RE.test(to) ? undefined : 'a #channel or a nick, without spaces or commas';
}

/** Every line we write is checked once more here: a CR or LF would let a value inject a command. */
export function assertOneLine(line: string): void {
  if (/[\r\n\0]/.test(line)) throw new IrcError(false, 'refusing to send a line containing CR, LF or NUL');
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

export function isErrorNumeric(m: IrcMessage): boolean {
  return /^[45]\d\d$/.test(m.command);
}

export function numericError(m: IrcMessage, target: string): IrcError {
  // The server's own wording is left out: some servers quote the refused line back, and that is message text.
  const meaning = NUMERIC_MEANING[m.command] ?? 'error numeric';
  return new IrcError(RETRYABLE_NUMERICS.has(m.command), `IRC server refused ${target}: ${meaning} (${m.command})`);
}
