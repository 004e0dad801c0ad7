// Recognising the heartbeat acknowledgement `HEARTBEAT_OK` in an agent reply.
//
// Agents are told to answer `HEARTBEAT_OK` when a heartbeat (or a hook run) has nothing worth telling the
// user. Models rarely emit the bare token: they bold it, wrap it in a tag or backticks, add a full stop, or
// put it before/after a short remark. Delivering such a reply would spam the user's chat with noise, so the
// runtime strips the token and treats the reply as a silent acknowledgement when little text remains.
// Pure functions only.

import { HEARTBEAT_TOKEN } from '../prompt-markers.js';

export { HEARTBEAT_TOKEN };
/** Default budget of other characters an acknowledgement may carry (`agents.*.heartbeat.ackMaxChars`). */
export const DEFAULT_ACK_MAX_CHARS = 300;

// Markup that may wrap the token: Markdown emphasis/code characters, or one short HTML-ish tag such as
// <b>, </strong>, <code class="x">. Tags are bounded ({0,40}) and the repetitions below are bounded too,
// so a hostile reply made of thousands of `*` or `<` cannot make these regexes backtrack quadratically.
const MARK = String.raw`(?:[*_\x60~]|<\/?[A-Za-z][^<>\n]{0,40}>)`;

// Token at the very start (after trimming): optional markup/whitespace, the token, not glued to a following
// letter/digit (HEARTBEAT_OKAY is a different word), closing markup, then up to 4 punctuation characters
// ("HEARTBEAT_OK.", "HEARTBEAT_OK!!", "**HEARTBEAT_OK.**").
const START_RE = new RegExp(
  String.raw`^(?:\s|${MARK}){0,16}${HEARTBEAT_TOKEN}(?![A-Za-z0-9])${MARK}{0,8}[^\w\s]{0,4}${MARK}{0,8}`,
);

// Token at the very end: not glued to a preceding letter/digit/underscore (so "fooHEARTBEAT_OK" and
// "MY_HEARTBEAT_OK" do not count; "_HEARTBEAT_OK_" italics still do, the lookbehind sits before the markup), the
// same markup and trailing punctuation allowances, then the end of the (trimmed) text.
const END_RE = new RegExp(
  String.raw`(?<![A-Za-z0-9_])${MARK}{0,8}${HEARTBEAT_TOKEN}${MARK}{0,8}[^\w\s]{0,4}${MARK}{0,8}$`,
);

// Each pass removes at least the 12-character token, so this bound only matters for degenerate replies like
// "HEARTBEAT_OK HEARTBEAT_OK …"; it keeps the work linear in the reply length.
const MAX_PASSES = 4;

/**
 * Removes `HEARTBEAT_OK` (with its surrounding markup and up to 4 trailing punctuation characters) from the
 * start and/or the end of `reply`. A token in the middle of the text is left alone: a reply that merely
 * mentions it is a real message. `stripped` is the remaining text, trimmed; `hadToken` says whether any token
 * was removed.
 */
export function stripHeartbeatToken(reply: string): { stripped: string; hadToken: boolean } {
  let text = String(reply ?? '').trim();
  let hadToken = false;
  if (!text.includes(HEARTBEAT_TOKEN)) return { stripped: text, hadToken };
  for (let pass = 0; pass < MAX_PASSES; pass += 1) {
    let changed = false;
    const start = START_RE.exec(text);
    if (start) {
      text = text.slice(start[0].length).trim();
      changed = true;
    }
    const end = END_RE.exec(text);
    if (end) {
      text = text.slice(0, end.index).trim();
      changed = true;
    }
    if (!changed) break;
    hadToken = true;
  }
  return { stripped: text, hadToken };
}

/** Length in code points, counting no further than `limit + 1` (replies can be long; we only need "> limit"). */
function exceeds(text: string, limit: number): boolean {
  if (text.length <= limit) return false; // UTF-16 length is an upper bound on code points
  let count = 0;
  for (const _ of text) {
    count += 1;
    if (count > limit) return true;
  }
  return false;
}

/**
 * True when `reply` is only a heartbeat acknowledgement and must not be delivered: it is empty (nothing to
 * deliver), or it had the token at its start or end and at most `ackMaxChars` characters (code points) are
 * left once the token is stripped. A non-finite or negative `ackMaxChars` counts as 0, except `Infinity`.
 */
export function isHeartbeatAck(reply: string, ackMaxChars: number): boolean {
  if (String(reply ?? '').trim() === '') return true;
  const { stripped, hadToken } = stripHeartbeatToken(reply);
  if (!hadToken) return false;
  const limit =
    ackMaxChars === Infinity ? Infinity : Number.isFinite(ackMaxChars) ? Math.max(0, Math.floor(ackMaxChars)) : 0;
  return !exceeds(stripped, limit);
}
