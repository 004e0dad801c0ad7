/**
 * Writing `hooks.gmail` into a JSON5 config without losing the user's comments and layout: the text is edited, never
 * re-serialised. A commented block is inserted as the last member of `hooks` (or of the root, inside a new `hooks`,
 * when there is none); a `gmail: {}` placeholder is replaced in place. A non-empty `hooks.gmail` is never rewritten:
 * the caller prints the block for the user to paste instead.
 */
import JSON5 from 'json5';
import { appendMember, indentAt, lineStart, member, tokenize } from './json5-edit.js';

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

export type EditResult =
  | {
      kind: 'edited';
      text: string;
      how: 'appended to hooks' | 'added a hooks section' | 'replaced the empty gmail: {}';
    }
  | { kind: 'same' }
  | { kind: 'refused'; reason: string };

/**
 * The config text with `hooks.gmail` set to the block. `blockLines(indent)` renders `gmail: { … },` at an indent;
 * `value` is what it parses to, so a config that already holds exactly this block is left alone.
 */
export function insertGmail(
  text: string,
  value: Record<string, unknown>,
  blockLines: (indent: string) => string,
): EditResult {
  let parsed: unknown;
  try {
    parsed = JSON5.parse(text);
  } catch (err) {
    return { kind: 'refused', reason: `it is not valid JSON5 (${(err as Error).message})` };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    return { kind: 'refused', reason: 'it is not a JSON5 object' };
  const hooks = (parsed as Record<string, unknown>).hooks;
  if (hooks !== undefined && (hooks === null || typeof hooks !== 'object' || Array.isArray(hooks)))
    return { kind: 'refused', reason: 'its hooks is not an object' };
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
  if (existing === undefined)
    return { kind: 'edited', text: appendMember(text, tokens, hooksOpen, blockLines), how: 'appended to hooks' };
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
