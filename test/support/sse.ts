/**
 * A Server-Sent Events reader for the tests of the live feed: parses the stream as EventSource does (`id:`, `event:`,
 * `data:` lines, a blank line ends a frame, `:` lines are comments) and keeps every frame.
 */
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { waitFor } from './wait.js';

export interface SseFrame {
  id: string | undefined;
  event: string;
  data: Record<string, unknown>;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage['headers'];
  frames: SseFrame[];
  comments: string[];
  /** The last `id:` seen (what EventSource would send as Last-Event-ID). */
  lastId: string | undefined;
  ended: boolean;
  /** Wait for a frame that `pred` accepts (searching every frame so far). */
  next(pred: (f: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>;
  close(): void;
  /** The raw response (a test pauses it to play a slow client). */
  res: IncomingMessage;
  req: ClientRequest;
}

export function openSse(url: string, opts: { token?: string; lastEventId?: string } = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
    const req = request(url, { headers });
    req.on('error', reject);
    req.on('response', (res) => {
      const s: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        frames: [],
        comments: [],
        lastId: undefined,
        ended: false,
        next: (pred, timeoutMs = 5000) => waitFor('an SSE frame', () => s.frames.find(pred), { timeoutMs, intervalMs: 5 }),
        close: () => req.destroy(),
        res,
        req,
      };
      let buf = '';
      let frame: { id?: string; event?: string; data: string[] } = { data: [] };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line === '') {
            if (frame.data.length) {
              if (frame.id !== undefined) s.lastId = frame.id;
              s.frames.push({ id: frame.id, event: frame.event ?? 'message', data: JSON.parse(frame.data.join('\n')) as Record<string, unknown> });
            }
            frame = { data: [] };
          } else if (line.startsWith(':')) s.comments.push(line.slice(1).trim());
          else {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'id') frame.id = value;
            else if (field === 'event') frame.event = value;
            else if (field === 'data') frame.data.push(value);
          }
        }
      });
      res.on('close', () => (s.ended = true));
      res.on('error', () => (s.ended = true));
      resolve(s);
    });
    req.end();
  });
}
