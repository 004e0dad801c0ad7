/**
 * Writing `hooks.gmail` into a JSON5 config without losing the user's comments and layout: the text is edited, never
 * re-serialised. A commented block is inserted as the last member of `hooks` (or of the root, inside a new `hooks`,
 * when there is none); a `gmail: {}` placeholder is replaced in place. A non-empty `hooks.gmail` is never rewritten:
 * the caller prints the block for the user to paste instead.
 */
import JSON5 from 'json5';

/** What `setup` writes. Secrets are `{ env: NAME }` references unless the user passed their values. */
export interface GmailBlock {
  account: string;
  project: string;
  topic: string;
  subscription: string;
  pushPath: string;
  audience: string;
  serviceAccountEmail: string;
  labels: string[];
  includeBody: boolean;
  maxBodyChars: number;
  oauth: { clientId: Secret; clientSecret: Secret; refreshToken: Secret };
  renewEveryHours: number;
}

export type Secret = string | { env: string };

/** The value as the config will hold it (what JSON5.parse of the block gives). */
export function blockValue(b: GmailBlock): Record<string, unknown> {
  return { ...b, labels: [...b.labels], oauth: { ...b.oauth } };
}

const lit = (v: unknown) => JSON.stringify(v);
const secret = (s: Secret) => (typeof s === 'string' ? lit(s) : `{ env: ${lit(s.env)} }`);

/** `gmail: { … },` as commented JSON5 lines, each starting with `indent`. */
export function gmailBlockText(b: GmailBlock, indent: string, pushEndpoint: string, when: string): string {
  const i2 = `${indent}  `;
  const i3 = `${i2}  `;
  const pad = (s: string, w = 42) => (s.length >= w ? `${s} ` : s.padEnd(w));
  const lines = [
    `${indent}// Gmail push (written by \`hookgate gmail setup\`, ${when}). How it works and every key: docs/gmail.md`,
    `${indent}gmail: {`,
    `${i2}${pad(`account: ${lit(b.account)},`)}// the mailbox watched`,
    `${i2}${pad(`project: ${lit(b.project)},`)}// the Google Cloud project of the topic`,
    `${i2}${pad(`topic: ${lit(b.topic)},`)}// Gmail publishes a notification here`,
    `${i2}${pad(`subscription: ${lit(b.subscription)},`)}// pushes them to hookgate`,
    `${i2}${pad(`pushPath: ${lit(b.pushPath)},`)}// Pub/Sub posts to ${pushEndpoint}`,
    `${i2}${pad(`audience: ${lit(b.audience)},`)}// the "aud" of the push's OIDC token`,
    `${i2}${pad(`serviceAccountEmail: ${lit(b.serviceAccountEmail)},`)}// the "email" of the push's OIDC token`,
    `${i2}${pad(`labels: [${b.labels.map(lit).join(', ')}],`)}// only mail with these labels`,
    `${i2}${pad(`includeBody: ${b.includeBody},`)}// the message body as text, for the agent`,
    `${i2}${pad(`maxBodyChars: ${b.maxBodyChars},`)}// longer bodies are cut`,
    `${i2}oauth: {                                  // the mailbox's OAuth client (read-only Gmail scope)`,
    `${i3}clientId: ${secret(b.oauth.clientId)},`,
    `${i3}clientSecret: ${secret(b.oauth.clientSecret)},`,
    `${i3}refreshToken: ${secret(b.oauth.refreshToken)},`,
    `${i2}},`,
    `${i2}${pad(`renewEveryHours: ${b.renewEveryHours},`)}// users.watch again this often (a watch lasts 7 days)`,
    `${indent}},`,
  ];
  return `${lines.join('\n')}\n`;
}

interface Token {
  kind: 'punct' | 'string' | 'word';
  start: number;
  end: number;
  text: string;
}

/** The significant tokens of JSON5 text: comments and white space skipped, strings whole. */
function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c) || c === '\uFEFF') {
      i++;
    } else if (text.startsWith('//', i)) {
      const nl = text.indexOf('\n', i);
      i = nl === -1 ? text.length : nl;
    } else if (text.startsWith('/*', i)) {
      const close = text.indexOf('*/', i + 2);
      i = close === -1 ? text.length : close + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) j += text[j] === '\\' ? 2 : 1;
      out.push({ kind: 'string', start: i, end: j + 1, text: text.slice(i, j + 1) });
      i = j + 1;
    } else if ('{}[],:'.includes(c)) {
      out.push({ kind: 'punct', start: i, end: i + 1, text: c });
      i++;
    } else {
      let j = i;
      while (j < text.length && !/[\s{}[\],:"'/]/.test(text[j]!)) j++;
      if (j === i) j++; // a lone '/' that starts no comment: JSON5.parse has already refused such a file
      out.push({ kind: 'word', start: i, end: j, text: text.slice(i, j) });
      i = j;
    }
  }
  return out;
}

const keyName = (t: Token): string => {
  if (t.kind !== 'string') return t.text;
  try {
    return String(JSON5.parse(t.text));
  } catch {
    return t.text;
  }
};

/** The index of the token closing the container opened at `open`. */
function closing(tokens: Token[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    const t = tokens[i]!.text;
    if (tokens[i]!.kind !== 'punct') continue;
    if (t === '{' || t === '[') depth++;
    else if (t === '}' || t === ']') depth--;
    if (depth === 0) return i;
  }
  return tokens.length - 1;
}

/** The member `key` of the object opened at `open`: the indices of its key token and of its value's first token. */
function member(tokens: Token[], open: number, key: string): { key: number; value: number } | undefined {
  const close = closing(tokens, open);
  for (let i = open + 1; i < close; i++) {
    const t = tokens[i]!;
    if (t.kind === 'punct' && (t.text === '{' || t.text === '[')) {
      i = closing(tokens, i);
      continue;
    }
    if (tokens[i + 1]?.text === ':' && tokens[i + 1]!.kind === 'punct' && t.kind !== 'punct' && keyName(t) === key) return { key: i, value: i + 2 };
  }
  return undefined;
}

const lineStart = (text: string, pos: number) => text.lastIndexOf('\n', pos - 1) + 1;
const indentAt = (text: string, pos: number) => /^[ \t]*/.exec(text.slice(lineStart(text, pos)))![0];

/** `member` (lines, each already indented for the object) as the last member of the object opened at `open`. */
function appendMember(text: string, tokens: Token[], open: number, lines: (indent: string) => string): string {
  const close = closing(tokens, open);
  const closeTok = tokens[close]!;
  const last = tokens[close - 1]!;
  const needsComma = close - 1 !== open && last.text !== ',';
  const closeIndent = indentAt(text, closeTok.start);
  const ownLine = text.slice(lineStart(text, closeTok.start), closeTok.start).trim() === '';
  const memberIndent = `${closeIndent}  `;
  const at = ownLine ? lineStart(text, closeTok.start) : closeTok.start;
  const block = `${ownLine ? '' : '\n'}${lines(memberIndent)}${ownLine ? '' : closeIndent}`;
  let out = text.slice(0, at) + block + text.slice(at);
  if (needsComma) out = `${out.slice(0, last.end)},${out.slice(last.end)}`;
  return out;
}

export type EditResult =
  | { kind: 'edited'; text: string; how: 'appended to hooks' | 'added a hooks section' | 'replaced the empty gmail: {}' }
  | { kind: 'same' }
  | { kind: 'refused'; reason: string };

/**
 * The config text with `hooks.gmail` set to the block. `blockLines(indent)` renders `gmail: { … },` at an indent;
 * `value` is what it parses to, so a config that already holds exactly this block is left alone.
 */
export function insertGmail(text: string, value: Record<string, unknown>, blockLines: (indent: string) => string): EditResult {
  let parsed: unknown;
  try {
    parsed = JSON5.parse(text);
  } catch (err) {
    return { kind: 'refused', reason: `it is not valid JSON5 (${(err as Error).message})` };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return { kind: 'refused', reason: 'it is not a JSON5 object' };
  const hooks = (parsed as Record<string, unknown>).hooks;
  if (hooks !== undefined && (hooks === null || typeof hooks !== 'object' || Array.isArray(hooks))) return { kind: 'refused', reason: 'its hooks is not an object' };
  const existing = (hooks as Record<string, unknown> | undefined)?.gmail;
  if (existing !== undefined && JSON.stringify(existing) === JSON.stringify(value)) return { kind: 'same' };
  const tokens = tokenize(text);
  const root = tokens.findIndex((t) => t.kind === 'punct' && t.text === '{');
  if (root !== 0) return { kind: 'refused', reason: 'it does not start with an object' };
  const hooksMember = member(tokens, root, 'hooks');
  if (!hooksMember) {
    const edited = appendMember(text, tokens, root, (ind) => `${ind}hooks: {\n${blockLines(`${ind}  `)}${ind}},\n`);
    return { kind: 'edited', text: edited, how: 'added a hooks section' };
  }
  const hooksOpen = hooksMember.value;
  if (tokens[hooksOpen]?.text !== '{') return { kind: 'refused', reason: 'its hooks is not written as an object' };
  if (existing === undefined) return { kind: 'edited', text: appendMember(text, tokens, hooksOpen, blockLines), how: 'appended to hooks' };
  const gmail = member(tokens, hooksOpen, 'gmail');
  const empty = gmail && tokens[gmail.value]?.text === '{' && tokens[gmail.value + 1]?.text === '}';
  if (!gmail || !empty || JSON.stringify(existing) !== '{}') {
    return { kind: 'refused', reason: 'it already has a hooks.gmail section, which hookgate does not rewrite' };
  }
  // Replace `gmail: {}` (and the comma after it, which the block brings) by the block, from the start of its line.
  const keyTok = tokens[gmail.key]!;
  let end = tokens[gmail.value + 1]!.end;
  if (tokens[gmail.value + 2]?.text === ',') end = tokens[gmail.value + 2]!.end;
  const onlyMember = text.slice(lineStart(text, keyTok.start), keyTok.start).trim() === '';
  if (!onlyMember) return { kind: 'refused', reason: 'its hooks.gmail shares a line with other keys; edit it by hand' };
  const from = lineStart(text, keyTok.start);
  const rest = text.slice(end).replace(/^[ \t]*\n/, '');
  const edited = `${text.slice(0, from)}${blockLines(indentAt(text, keyTok.start))}${rest}`;
  return { kind: 'edited', text: edited, how: 'replaced the empty gmail: {}' };
}
