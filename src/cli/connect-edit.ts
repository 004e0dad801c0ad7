/**
 * `hookgate connect` in the config file: one `hooks.presets` entry added (or, with --force, put in place of the one on
 * its path), the rest of the text kept as it is: comments, layout, other entries (json5-edit.ts).
 */
import { normalizeMatchPath } from '../config/schema/hooks.js';
import { appendMember, elements, indentAt, lineStart, member, tokenize } from './json5-edit.js';

/** A secret as the entry holds it: a reference (`{ file }`, `{ env }`) or, only for checking the edit, the value. */
export type SecretValue = { file: string } | { env: string } | string;

/** What `connect` writes: a sender preset entry (config/schema/hooks.ts `senderPresetSchema`). */
export interface ConnectEntry {
  use: string;
  path: string;
  secret: SecretValue;
  events?: string[];
  action?: 'agent' | 'wake';
  channel?: string;
  to?: string;
  /** The public URL the sender calls, for a sender that signs it (Twilio). */
  url?: string;
}

const lit = (v: unknown) => JSON.stringify(v);

/** The entry as one line of JSON5: `{ use: "github", path: "github", secret: { file: "…" } }`. */
export function entryText(e: ConnectEntry): string {
  const ref = e.secret;
  const secret =
    typeof ref === 'string' ? lit(ref) : 'file' in ref ? `{ file: ${lit(ref.file)} }` : `{ env: ${lit(ref.env)} }`;
  const parts = [`use: ${lit(e.use)}`, `path: ${lit(e.path)}`, `secret: ${secret}`];
  if (e.events) parts.push(`events: [${e.events.map(lit).join(', ')}]`);
  if (e.action) parts.push(`action: ${lit(e.action)}`);
  if (e.channel) parts.push(`channel: ${lit(e.channel)}`);
  if (e.to) parts.push(`to: ${lit(e.to)}`);
  if (e.url) parts.push(`url: ${lit(e.url)}`);
  return `{ ${parts.join(', ')} }`;
}

/** What already takes a sub-path in the config as written: a preset entry, a custom mapping, the Gmail push. */
export type Occupant = { kind: 'preset'; index: number; at: string } | { kind: 'mapping' | 'gmail'; at: string };

const record = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** The first thing of `raw` (the parsed file) on `path`, if any. */
export function occupantOf(raw: Record<string, unknown>, path: string): Occupant | undefined {
  const hooks = record(raw.hooks) ?? {};
  const presets = Array.isArray(hooks.presets) ? (hooks.presets as unknown[]) : [];
  for (const [i, p] of presets.entries()) {
    const at = `hooks.presets[${i}]`;
    if (p === 'gmail' && path === 'gmail') return { kind: 'gmail', at: `${at} (the gmail preset)` };
    const entry = record(p);
    const own =
      entry && (typeof entry.path === 'string' ? entry.path : typeof entry.use === 'string' ? entry.use : undefined);
    if (own !== undefined && normalizeMatchPath(own) === path)
      return { kind: 'preset', index: i, at: `${at} (${String(entry!.use)})` };
  }
  const mappings = Array.isArray(hooks.mappings) ? (hooks.mappings as unknown[]) : [];
  for (const [i, m] of mappings.entries()) {
    const matchPath = record(record(m)?.match)?.path;
    if (typeof matchPath === 'string' && normalizeMatchPath(matchPath) === path)
      return { kind: 'mapping', at: `hooks.mappings[${i}]` };
  }
  const gmail = record(hooks.gmail);
  if (gmail?.account !== undefined) {
    if (path === 'gmail') return { kind: 'gmail', at: 'hooks.gmail (the gmail preset)' };
    const push = typeof gmail.pushPath === 'string' ? normalizeMatchPath(gmail.pushPath) : 'gmail-push';
    if (push === path) return { kind: 'gmail', at: 'hooks.gmail.pushPath (the Gmail push receiver)' };
  }
  return undefined;
}

/** The comment line `connect` writes above an entry (`connectComment`). */
const WRITTEN_BY_RE = /^[ \t]*\/\/ .*: written by `hookgate connect [^`]*` on \d{4}-\d{2}-\d{2}\b.*\n$/;

/** The comment written above an entry: what wrote it, when, and where the sender's side is told. */
export function connectComment(title: string, name: string, now: Date): string {
  return `${title}: written by \`hookgate connect ${name}\` on ${now.toISOString().slice(0, 10)}; the sender's side: docs/senders.md`;
}

export type ConnectEdit =
  | { kind: 'edited'; text: string; index: number; how: string }
  | { kind: 'refused'; reason: string };

/**
 * The text with the entry added as the last element of `hooks.presets` (created, and `hooks` with it, when missing),
 * or, with `replace`, put in place of that element. `comment` is a line written above an entry on a line of its own.
 */
export function addPresetEntry(text: string, entry: string, comment: string, replace?: number): ConnectEdit {
  const tokens = tokenize(text);
  const root = tokens.findIndex((t) => t.kind === 'punct' && t.text === '{');
  if (root !== 0) return { kind: 'refused', reason: 'it does not start with an object' };
  const block = (indent: string) => `${indent}// ${comment}\n${indent}${entry},\n`;
  const hooks = member(tokens, root, 'hooks');
  if (!hooks) {
    const lines = (ind: string) => `${ind}hooks: {\n${ind}  presets: [\n${block(`${ind}    `)}${ind}  ],\n${ind}},\n`;
    return {
      kind: 'edited',
      text: appendMember(text, tokens, root, lines),
      index: 0,
      how: 'added a hooks section with presets',
    };
  }
  if (tokens[hooks.value]?.text !== '{') return { kind: 'refused', reason: 'its hooks is not written as an object' };
  const presets = member(tokens, hooks.value, 'presets');
  if (!presets) {
    const lines = (ind: string) => `${ind}presets: [\n${block(`${ind}  `)}${ind}],\n`;
    return {
      kind: 'edited',
      text: appendMember(text, tokens, hooks.value, lines),
      index: 0,
      how: 'added hooks.presets',
    };
  }
  const open = presets.value;
  if (tokens[open]?.text !== '[') return { kind: 'refused', reason: 'its hooks.presets is not written as an array' };
  const items = elements(tokens, open);
  if (replace === undefined) {
    const index = items.length;
    return {
      kind: 'edited',
      text: appendMember(text, tokens, open, block),
      index,
      how: `added hooks.presets[${index}]`,
    };
  }
  const item = items[replace];
  if (!item) return { kind: 'refused', reason: `hooks.presets[${replace}] is not where it was expected` };
  const first = tokens[item.first]!;
  const last = tokens[item.last]!;
  const from = lineStart(text, first.start);
  const ownLine = text.slice(from, first.start).trim() === '';
  let end = last.end;
  const after = tokens[item.last + 1];
  if (after?.text === ',' && after.kind === 'punct') end = after.end;
  const restOfLine = /^[ \t]*\n/.exec(text.slice(end));
  // On lines of their own (the usual layout), the entry's lines are replaced whole; inside a one-line array, its text.
  if (ownLine && restOfLine) {
    // The comment an earlier `connect` wrote above the entry goes with it; the user's own comments stay.
    const above = lineStart(text, from - 1);
    const start = from > 0 && WRITTEN_BY_RE.test(text.slice(above, from)) ? above : from;
    const edited = `${text.slice(0, start)}${block(indentAt(text, first.start))}${text.slice(end + restOfLine[0].length)}`;
    return { kind: 'edited', text: edited, index: replace, how: `replaced hooks.presets[${replace}]` };
  }
  const inline = `${text.slice(0, first.start)}${entry}${text.slice(last.end)}`;
  return { kind: 'edited', text: inline, index: replace, how: `replaced hooks.presets[${replace}]` };
}
