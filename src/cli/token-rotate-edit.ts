/**
 * The config edit of `hookgate token rotate`, on the text (json5-edit.ts: comments and layout kept): the new
 * `{ id, token }` is appended to `<section>.tokens` (created when absent); a single `<section>.token` moves into the
 * list as `{ id: "default", token: <its value, as written> }` (a `{ file }` or `${VAR}` reference stays one), so every
 * token of the section is in one list; with `notAfter`, every listed token that has none gets it. Pure: no file system.
 */
import JSON5 from 'json5';
import { DEFAULT_TOKEN_ID } from '../config/schema/tokens.js';
import { appendMember, closing, lineStart, member, type Token, tokenize } from './json5-edit.js';

export interface RotateInput {
  section: 'hooks' | 'admin';
  /** The new entry's id (checked unique here) and secret. */
  id: string;
  token: string;
  /** ISO date-time given to every old token that has no `notAfter` (undefined: they stay valid). */
  notAfterOld?: string | undefined;
  /** When, for the comment above the new entry. */
  now: Date;
}

export type RotateResult =
  | { kind: 'edited'; text: string; moved: boolean; oldIds: string[]; expiring: string[] }
  | { kind: 'refused'; reason: string };

const lit = (v: unknown) => JSON.stringify(v);

/** The ids a section lists now (`default` for a single token), in order. */
export function listedIds(parsed: unknown, section: 'hooks' | 'admin'): string[] {
  const s = (parsed as Record<string, Record<string, unknown> | undefined> | undefined)?.[section];
  const list = Array.isArray(s?.tokens) ? (s.tokens as Array<{ id?: unknown }>) : [];
  return [...(s?.token !== undefined ? [DEFAULT_TOKEN_ID] : []), ...list.map((t) => String(t?.id))];
}

/** A free id for a token made on `now`: its UTC date, then `-2`, `-3`, … */
export function newTokenId(taken: readonly string[], now: Date): string {
  const day = now.toISOString().slice(0, 10);
  if (!taken.includes(day)) return day;
  for (let n = 2; ; n++) if (!taken.includes(`${day}-${n}`)) return `${day}-${n}`;
}

export function rotateTokens(text: string, input: RotateInput): RotateResult {
  const { section } = input;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON5.parse(text) as Record<string, unknown>;
  } catch (err) {
    return { kind: 'refused', reason: `it is not valid JSON5 (${(err as Error).message})` };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    return { kind: 'refused', reason: 'it is not a JSON5 object' };
  const value = parsed[section];
  if (value === undefined)
    return {
      kind: 'refused',
      reason: `it has no ${section} section (set ${section}.token or ${section}.tokens first)`,
    };
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { kind: 'refused', reason: `its ${section} is not an object` };
  const tokensValue = (value as Record<string, unknown>).tokens;
  if (tokensValue !== undefined && !Array.isArray(tokensValue))
    return { kind: 'refused', reason: `its ${section}.tokens is not a list` };
  const oldIds = listedIds(parsed, section);
  if (oldIds.includes(input.id))
    return { kind: 'refused', reason: `${section}.tokens already has the id "${input.id}"` };

  let t = tokenize(text);
  const sectionOpen = (tokens: Token[]) => {
    const m = tokens[0]?.text === '{' ? member(tokens, 0, section) : undefined;
    return m && tokens[m.value]?.text === '{' ? m.value : undefined;
  };
  if (sectionOpen(t) === undefined) return { kind: 'refused', reason: `its ${section} is not written as an object` };

  // 1. A single token moves into the list, its value as written.
  let movedValue: string | undefined;
  const single = member(t, sectionOpen(t)!, 'token');
  if (single) {
    const end = valueEnd(t, single.value);
    movedValue = text.slice(t[single.value]!.start, t[end]!.end);
    text = removeMember(text, t, single.key, end);
    t = tokenize(text);
  }

  // 2. Every listed token without an expiry gets one.
  const expiring: string[] = [];
  const notAfter = input.notAfterOld;
  const list = tokensValue as Array<Record<string, unknown>> | undefined;
  if (notAfter !== undefined && list) {
    for (let j = 0; j < list.length; j++) {
      if (list[j]?.notAfter !== undefined) continue;
      const open = elementOpen(t, tokensOpen(t, sectionOpen(t)!)!, j);
      if (open === undefined || t[open]!.text !== '{')
        return { kind: 'refused', reason: `its ${section}.tokens[${j}] is not written as an object` };
      text = addMember(text, t, open, `notAfter: ${lit(notAfter)}`);
      t = tokenize(text);
      expiring.push(String(list[j]!.id));
    }
  }

  // 3. Append the moved token and the new one.
  const entries: string[] = [];
  if (movedValue !== undefined) {
    entries.push(
      `{ id: ${lit(DEFAULT_TOKEN_ID)}, token: ${movedValue}${notAfter !== undefined ? `, notAfter: ${lit(notAfter)}` : ''} },`,
    );
    if (notAfter !== undefined) expiring.unshift(DEFAULT_TOKEN_ID);
  }
  const when = input.now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const added = [
    `// added by \`hookgate token rotate\` at ${when}`,
    `{ id: ${lit(input.id)}, token: ${lit(input.token)} },`,
  ];
  const open = sectionOpen(t)!;
  const arrayOpen = tokensOpen(t, open);
  if (arrayOpen !== undefined) {
    const lines = [...(movedValue !== undefined ? [`// was ${section}.token`] : []), ...entries, ...added];
    text = appendMember(text, t, arrayOpen, (ind) => lines.map((l) => `${ind}${l}\n`).join(''));
  } else {
    const lines = [...entries, ...added];
    text = appendMember(
      text,
      t,
      open,
      (ind) => `${ind}tokens: [\n${lines.map((l) => `${ind}  ${l}\n`).join('')}${ind}],\n`,
    );
  }
  return { kind: 'edited', text, moved: movedValue !== undefined, oldIds, expiring };
}

/** The `[` of `<section>.tokens` inside the section opened at `open`, if written as a list. */
function tokensOpen(t: Token[], open: number): number | undefined {
  const m = member(t, open, 'tokens');
  return m && t[m.value]?.text === '[' ? m.value : undefined;
}

/** The index of the last token of the value starting at `i`. */
function valueEnd(t: Token[], i: number): number {
  return t[i]!.kind === 'punct' && (t[i]!.text === '{' || t[i]!.text === '[') ? closing(t, i) : i;
}

/** The first token of element `n` of the list opened at `open`. */
function elementOpen(t: Token[], open: number, n: number): number | undefined {
  const close = closing(t, open);
  let i = open + 1;
  for (let k = 0; i < close; k++) {
    if (k === n) return i;
    i = valueEnd(t, i) + 1;
    if (t[i]?.text === ',') i++;
  }
  return undefined;
}

/** The text without the member whose key is token `key` and whose value ends at token `end` (its comma and, when left blank, its line too). */
function removeMember(text: string, t: Token[], key: number, end: number): string {
  let from = t[key]!.start;
  let to = t[end]!.end;
  if (t[end + 1]?.text === ',') to = t[end + 1]!.end;
  else if (t[key - 1]?.text === ',') from = t[key - 1]!.start;
  const ls = lineStart(text, from);
  const nl = text.indexOf('\n', to);
  const lineEnd = nl === -1 ? text.length : nl;
  const rest = text.slice(to, lineEnd).trim();
  // A member alone on its line goes with the line, and with a comment that ends it (it was about this member).
  if (text.slice(ls, from).trim() === '' && (rest === '' || rest.startsWith('//')))
    return text.slice(0, ls) + text.slice(Math.min(lineEnd + 1, text.length));
  return text.slice(0, from) + text.slice(to).replace(/^[ \t]+(?=[}\]])/, ' ');
}

/** `entry` as the last member of the object opened at `open`: on a line of its own if the object spans lines, else inline. */
function addMember(text: string, t: Token[], open: number, entry: string): string {
  const close = closing(t, open);
  const closeOwnLine = text.slice(lineStart(text, t[close]!.start), t[close]!.start).trim() === '';
  if (closeOwnLine) return appendMember(text, t, open, (ind) => `${ind}${entry},\n`);
  const last = t[close - 1]!;
  const insert = close - 1 === open ? ` ${entry} ` : `${last.text === ',' ? '' : ','} ${entry}`;
  return text.slice(0, last.end) + insert + text.slice(last.end);
}
