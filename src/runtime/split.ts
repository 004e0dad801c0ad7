/**
 * Splits a reply into chunks a platform accepts, each at most `maxLength` UTF-16 code units (JavaScript string
 * length; platforms that count code points or graphemes therefore accept every chunk too).
 *
 * Each cut is at the last boundary that fits, preferring, in order:
 *   1. a paragraph break (the cut goes after a blank line: "\n\n", "\n \n", "\r\n\r\n"),
 *   2. a line break (after "\n"),
 *   3. a word break (after a run of whitespace, so the next chunk starts with a word),
 *   4. anywhere, but never between the two halves of a surrogate pair (an emoji is never torn).
 * A boundary only counts if the chunk before it has some non-whitespace text, so a reply that starts with blank
 * lines does not produce a blank first message.
 *
 * Nothing is trimmed, dropped or added: `splitText(t, n).join('') === t` always holds, so the outbox can record
 * chunks and resume mid-reply without changing what the reader sees. The price is that a whitespace run longer than
 * `maxLength` yields whitespace-only chunks; platforms reject blank messages, so the outbox should skip a chunk for
 * which `chunk.trim() === ''`.
 *
 * An empty text gives no chunks.
 */
export function splitText(text: string, maxLength: number): string[] {
  if (!Number.isInteger(maxLength) || maxLength < 2) {
    // 1 cannot hold a surrogate pair, so "never split a pair" and "every chunk fits" could not both hold.
    throw new RangeError(`maxLength must be an integer ≥ 2, got ${maxLength}`);
  }
  const chunks: string[] = [];
  let start = 0;
  while (text.length - start > maxLength) {
    const cut = findCut(text, start, start + maxLength);
    chunks.push(text.slice(start, cut));
    start = cut;
  }
  if (start < text.length) chunks.push(text.slice(start));
  return chunks;
}

const isSpace = (c: string | undefined): boolean => c !== undefined && /\s/.test(c);

/** Where to end the chunk that starts at `start` and may not pass `end` (exclusive); start < result ≤ end. */
function findCut(text: string, start: number, end: number): number {
  // The chunk must contain this index to have visible text; boundaries at or before it make blank chunks.
  let firstVisible = start;
  while (firstVisible < end && isSpace(text[firstVisible])) firstVisible++;
  const minCut = firstVisible + 1;

  if (minCut <= end) {
    // 1. paragraph: after a "\n" whose line (back to the previous "\n") holds only whitespace.
    for (let c = end; c >= minCut; c--) {
      if (text[c - 1] === '\n' && isBlankLineBefore(text, c - 1, start)) return c;
    }
    // 2. line
    for (let c = end; c >= minCut; c--) {
      if (text[c - 1] === '\n') return c;
    }
    // 3. word: after whitespace, and at the end of the run unless the run continues past `end`.
    for (let c = end; c >= minCut; c--) {
      if (isSpace(text[c - 1]) && (c === end || !isSpace(text[c]))) return c;
    }
  }
  // 4. hard cut, stepping back off a high surrogate whose low half would land in the next chunk.
  const hi = text.charCodeAt(end - 1);
  const lo = text.charCodeAt(end);
  if (hi >= 0xd800 && hi <= 0xdbff && lo >= 0xdc00 && lo <= 0xdfff && end - 1 > start) return end - 1;
  return end;
}

/** True when the line ending at `nl` (a "\n") is blank and is preceded by another "\n" at or after `floor`. */
function isBlankLineBefore(text: string, nl: number, floor: number): boolean {
  for (let i = nl - 1; i >= floor; i--) {
    const ch = text[i];
    if (ch === '\n') return true;
    if (!isSpace(ch)) return false;
  }
  return false;
}
