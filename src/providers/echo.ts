/**
 * The built-in `echo` provider: deterministic, no network, for demos and tests.
 *
 * - model `ack` (`echo/ack`): always replies exactly `HEARTBEAT_OK`.
 * - any other model (`echo/echo` is the default): replies `echo: <text>`, where text is the last user message.
 *   When that message carries external-content boundary markers (the safety wrapper of hook runs), text is only the
 *   content inside them — metadata lines (`Source:`, and `From:`/`Subject:` when they precede it) and the `---` after the
 *   start marker are dropped, and
 *   the security notice around the block is not echoed. Several wrapped blocks are joined by a blank line.
 * - `system`, earlier turns and `thinking` are ignored; no usage is reported.
 */
import { checkOk } from '../check.js';
import {
  EXTERNAL_CONTENT_META_END,
  EXTERNAL_CONTENT_META_LABELS,
  EXTERNAL_CONTENT_WORD,
  HEARTBEAT_TOKEN,
  endMarker,
} from '../prompt-markers.js';
import { abortedError } from './retry.js';
import type { ModelProvider, ModelRequest } from './types.js';

export const ECHO_ACK_MODEL = 'ack';
export const HEARTBEAT_OK = HEARTBEAT_TOKEN;

const START = new RegExp(`<<<${EXTERNAL_CONTENT_WORD}(?: id="([^"]{1,128})")?>>>`, 'g');
/** Metadata lines the wrapper writes between the start marker and the `---` line. */
const META_LINE = new RegExp(`^(?:${EXTERNAL_CONTENT_META_LABELS.join('|')}):.*$`);

/** The content inside every external-content block of `text`, or undefined when there is none. */
export function unwrapExternalContent(text: string): string | undefined {
  const parts: string[] = [];
  START.lastIndex = 0;
  for (let m = START.exec(text); m; m = START.exec(text)) {
    // The end marker must carry the same id, so a forged end marker inside the content cannot cut it short.
    const end = endMarker(m[1]);
    const from = m.index + m[0].length;
    const to = text.indexOf(end, from);
    if (to === -1) break;
    parts.push(stripMetadata(text.slice(from, to)));
    START.lastIndex = to + end.length;
  }
  return parts.length > 0 ? parts.join('\n\n') : undefined;
}

/** Drops leading metadata lines when they end with a `---` line; otherwise the block is kept whole. */
function stripMetadata(block: string): string {
  const lines = block.replace(/^\r?\n/, '').split(/\r?\n/);
  let i = 0;
  while (i < lines.length && META_LINE.test(lines[i] ?? '')) i++;
  const body = lines[i]?.trim() === EXTERNAL_CONTENT_META_END ? lines.slice(i + 1) : lines;
  return body.join('\n').trim();
}

export function echoReplyText(request: Pick<ModelRequest, 'model' | 'messages'>): string {
  if (request.model === ECHO_ACK_MODEL) return HEARTBEAT_OK;
  let last = '';
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i];
    if (m?.role === 'user') {
      last = m.content;
      break;
    }
  }
  const text = unwrapExternalContent(last) ?? last.trim();
  return text ? `echo: ${text}` : 'echo:';
}

export function createEchoProvider(id = 'echo'): ModelProvider {
  return {
    id,
    api: 'echo',
    async complete(request) {
      if (request.signal.aborted) throw abortedError(`echo provider "${id}"`, request.signal.reason);
      return { text: echoReplyText(request) };
    },
    check: async () => checkOk('built in: answers with the message it is given'),
  };
}
