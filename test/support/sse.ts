/**
 * A Server-Sent Events reader for the tests of the live feed: parses the stream with src/sse.ts (as EventSource does)
 * and keeps every frame and comment.
 */
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { SseParser } from '../../src/sse.js';
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
        next: (pred, timeoutMs = 5000) =>
          waitFor('an SSE frame', () => s.frames.find(pred), { timeoutMs, intervalMs: 5 }),
        close: () => req.destroy(),
        res,
        req,
      };
      const parser = new SseParser(
        (m) => {
          if (m.id !== undefined) s.lastId = m.id;
          s.frames.push({ id: m.id, event: m.event, data: JSON.parse(m.data) as Record<string, unknown> });
        },
        (comment) => s.comments.push(comment),
      );
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.push(chunk));
      res.on('close', () => (s.ended = true));
      res.on('error', () => (s.ended = true));
      resolve(s);
    });
    req.end();
  });
}
