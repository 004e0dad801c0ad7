/**
 * A Gmail API message (`users.messages.get`, format `full`) as the `gmail` preset's payload item:
 * `{ id, threadId, from, to, subject, date, snippet, body }`. The body is the text/plain part (the first one that is
 * not an attachment), else the text/html part turned into text; bodies are base64url, decoded in the part's charset
 * when Node knows it (UTF-8 otherwise); cut at `maxBodyChars`.
 */
import { createRequire } from 'node:module';
import type * as HtmlToText from 'html-to-text';

export interface GmailApiPart {
  partId?: string;
  mimeType?: string;
  filename?: string;
  headers?: Array<{ name?: string; value?: string }>;
  body?: { size?: number; data?: string; attachmentId?: string };
  parts?: GmailApiPart[];
}

export interface GmailApiMessage {
  id?: string;
  threadId?: string;
  labelIds?: string[];
  snippet?: string;
  historyId?: string;
  internalDate?: string;
  payload?: GmailApiPart;
}

export interface GmailMail {
  id: string;
  threadId: string;
  from: string;
  to: string;
  subject: string;
  date: string;
  snippet: string;
  body: string;
}

export interface MailOptions {
  includeBody: boolean;
  maxBodyChars: number;
}

function header(part: GmailApiPart | undefined, name: string): string {
  const h = part?.headers?.find((x) => x.name?.toLowerCase() === name);
  return h?.value ?? '';
}

/** The part's body bytes decoded as text in its declared charset. */
function partText(part: GmailApiPart): string {
  const data = part.body?.data;
  if (!data) return '';
  const bytes = Buffer.from(data, 'base64url');
  const charset = /charset="?([^";\s]+)"?/i.exec(header(part, 'content-type'))?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset.toLowerCase()).decode(bytes);
  } catch {
    return bytes.toString('utf8');
  }
}

function isAttachment(part: GmailApiPart): boolean {
  return Boolean(part.filename) || /^\s*attachment/i.test(header(part, 'content-disposition'));
}

/** Depth-first, in order: the first part of `mimeType` that is not an attachment. */
function findPart(part: GmailApiPart | undefined, mimeType: string): GmailApiPart | undefined {
  if (!part) return undefined;
  if (part.mimeType?.toLowerCase() === mimeType && !isAttachment(part) && part.body?.data) return part;
  for (const child of part.parts ?? []) {
    const found = findPart(child, mimeType);
    if (found) return found;
  }
  return undefined;
}

/**
 * html-to-text and its parser are loaded on the first HTML-only mail, not at start: a process without Gmail (most)
 * never holds them in memory. Its CommonJS build, so the load stays synchronous.
 */
let convert: typeof HtmlToText.convert | undefined;

/** HTML → readable text (links kept as `text [url]`, images dropped). */
export function htmlToText(html: string): string {
  convert ??= (createRequire(import.meta.url)('html-to-text') as typeof HtmlToText).convert;
  return convert(html, {
    wordwrap: false,
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    ],
  });
}

/** The message's text: text/plain preferred, else HTML turned into text; trimmed and cut at `maxChars`. */
export function messageBody(payload: GmailApiPart | undefined, maxChars: number): string {
  const plain = findPart(payload, 'text/plain');
  let text = plain ? partText(plain) : '';
  if (!text.trim()) {
    const html = findPart(payload, 'text/html');
    text = html ? htmlToText(partText(html)) : '';
  }
  text = text.replace(/\r\n/g, '\n').trim();
  return [...text].length > maxChars ? [...text].slice(0, maxChars).join('') : text;
}

export function toMail(m: GmailApiMessage, opts: MailOptions): GmailMail {
  return {
    id: m.id ?? '',
    threadId: m.threadId ?? '',
    from: header(m.payload, 'from'),
    to: header(m.payload, 'to'),
    subject: header(m.payload, 'subject'),
    date: header(m.payload, 'date'),
    snippet: m.snippet ?? '',
    body: opts.includeBody ? messageBody(m.payload, opts.maxBodyChars) : '',
  };
}
