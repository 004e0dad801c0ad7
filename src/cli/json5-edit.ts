/**
 * Editing JSON5 config text without losing the user's comments and layout: the text is tokenised (comments and
 * white space skipped) and edited in place, never re-serialised. Used by `hookgate gmail setup`,
 * `hookgate token rotate` and `hookgate connect`.
 */
import { chmodSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import JSON5 from 'json5';

export interface Token {
  kind: 'punct' | 'string' | 'word';
  start: number;
  end: number;
  text: string;
}

/** The significant tokens of JSON5 text: comments and white space skipped, strings whole. */
export function tokenize(text: string): Token[] {
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

export const keyName = (t: Token): string => {
  if (t.kind !== 'string') return t.text;
  try {
    return String(JSON5.parse(t.text));
  } catch {
    return t.text;
  }
};

/** The index of the token closing the container opened at `open`. */
export function closing(tokens: Token[], open: number): number {
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
export function member(tokens: Token[], open: number, key: string): { key: number; value: number } | undefined {
  const close = closing(tokens, open);
  for (let i = open + 1; i < close; i++) {
    const t = tokens[i]!;
    if (t.kind === 'punct' && (t.text === '{' || t.text === '[')) {
      i = closing(tokens, i);
      continue;
    }
    if (tokens[i + 1]?.text === ':' && tokens[i + 1]!.kind === 'punct' && t.kind !== 'punct' && keyName(t) === key)
      return { key: i, value: i + 2 };
  }
  return undefined;
}

/** The elements of the array opened at `open`: the indices of each one's first and last token. */
export function elements(tokens: Token[], open: number): Array<{ first: number; last: number }> {
  const close = closing(tokens, open);
  const out: Array<{ first: number; last: number }> = [];
  let first = -1;
  for (let i = open + 1; i < close; i++) {
    const t = tokens[i]!;
    if (t.kind === 'punct' && t.text === ',') {
      if (first >= 0) out.push({ first, last: i - 1 });
      first = -1;
      continue;
    }
    if (first < 0) first = i;
    if (t.kind === 'punct' && (t.text === '{' || t.text === '[')) i = closing(tokens, i);
  }
  if (first >= 0) out.push({ first, last: close - 1 });
  return out;
}

export const lineStart = (text: string, pos: number) => text.lastIndexOf('\n', pos - 1) + 1;
export const indentAt = (text: string, pos: number) => /^[ \t]*/.exec(text.slice(lineStart(text, pos)))![0];

/** `member` (lines, each already indented for the object) as the last member of the object opened at `open`. */
export function appendMember(text: string, tokens: Token[], open: number, lines: (indent: string) => string): string {
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

/** Replace `file` with `text` through a temporary file and a rename (a watching server never reads half a file), keeping its mode (it holds secrets). */
export function replaceFileKeepingMode(file: string, text: string): void {
  const mode = statSync(file).mode & 0o777;
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}
