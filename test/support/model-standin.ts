/**
 * What the model API stand-ins share (anthropic-standin.ts and openai-standin.ts; readBody and listenLocal also
 * scripted-model.ts): the failure mode with its countdown and retry-after, the reply text, the record of request
 * bodies and calls, JSON answers, the hang, and the HTTP server's life on 127.0.0.1. Each stand-in keeps what is its API's
 * own: the URL path, the checks and their messages, the error bodies and the response shapes.
 *
 *   const kit = standinKit<MyMode, MyBody>();
 *   const { mode, retryAfter } = kit.takeMode();       // in the request handler, once per API request
 *   kit.send(req, res, 429, { error: ... }, { 'retry-after': retryAfter });
 *   return kit.serve(handler, '/v1');                  // { url, requests, calls, setMode, setReply, close }
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/** One HTTP request a stand-in got, with the status it answered (0: never answered). */
export interface StandinCall {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  status: number;
}

export interface ModeOptions {
  /** After this many requests in the mode, go back to 'ok'. Forever when unset. */
  times?: number;
  /** The retry-after header of the modes that send one (seconds or an HTTP date); "1" when unset. */
  retryAfter?: string;
}

/** The part of a request body the default reply reads. */
export interface MessagesBody {
  messages?: Array<{ role?: unknown; content?: unknown }>;
}

/** The control surface of a model API stand-in. */
export interface ModelStandin<Mode extends string, Body> {
  /** The baseUrl to configure. */
  url: string;
  /** Parsed JSON bodies received on the API path, in order. */
  requests: Body[];
  /** Every HTTP request, with the status it got. */
  calls: StandinCall[];
  setMode(mode: Mode, options?: ModeOptions): void;
  /** The text of 'ok' answers; by default `standin: <last user message>`. */
  setReply(reply: string | ((body: Body) => string)): void;
  close(): Promise<void>;
}

export interface StandinKit<Mode extends string, Body> {
  requests: Body[];
  calls: StandinCall[];
  /** The mode for the request at hand, and the retry-after to send; a request in a failure mode uses up one of its times. */
  takeMode(): { mode: Mode | 'ok'; retryAfter: string };
  /** The text of an 'ok' answer to `body`. */
  reply(body: Body): string;
  /** Records the call with status 0 and never answers it; close() drops the connection. */
  hang(req: IncomingMessage): void;
  /** Records the call and answers JSON (a string body goes out as is). */
  send(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    body: unknown,
    headers?: Record<string, string>,
  ): void;
  /** Serves `handler` on 127.0.0.1 at a free port; the url is the origin followed by `path`. */
  serve(handler: RequestListener, path?: string): Promise<ModelStandin<Mode, Body>>;
}

export function standinKit<Mode extends string, Body extends MessagesBody>(): StandinKit<Mode, Body> {
  const requests: Body[] = [];
  const calls: StandinCall[] = [];
  let mode: Mode | 'ok' = 'ok';
  let modeLeft = Infinity;
  let retryAfter = '1';
  let reply: (body: Body) => string = (body) => `standin: ${lastUserText(body)}`;

  const record = (req: IncomingMessage, status: number) => {
    calls.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, status });
  };
  return {
    requests,
    calls,
    takeMode() {
      const current = mode;
      if (current !== 'ok' && --modeLeft <= 0) {
        mode = 'ok';
        modeLeft = Infinity;
      }
      return { mode: current, retryAfter };
    },
    reply: (body) => reply(body),
    hang: (req) => record(req, 0),
    send(req, res, status, body, headers = {}) {
      record(req, status);
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    },
    async serve(handler, path = '') {
      const { port, close } = await listenLocal(createServer(handler));
      return {
        url: `http://127.0.0.1:${port}${path}`,
        requests,
        calls,
        setMode(next, opts = {}) {
          mode = next;
          modeLeft = opts.times ?? Infinity;
          retryAfter = opts.retryAfter ?? '1';
        },
        setReply(next) {
          reply = typeof next === 'string' ? () => next : next;
        },
        close,
      };
    },
  };
}

/** Listens on 127.0.0.1 at a free port; close() drops open connections (hanging requests too) and stops the server. */
export async function listenLocal(server: Server, atPort = 0): Promise<{ port: number; close(): Promise<void> }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(atPort, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(''));
  });
}

/** `raw` parsed as a JSON object; undefined when it is not JSON or not an object. */
export function parseJsonObject<T>(raw: string): T | undefined {
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as T) : undefined;
  } catch {
    return undefined;
  }
}

function lastUserText(body: MessagesBody): string {
  const msgs = Array.isArray(body.messages) ? body.messages : [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    const m = msgs[i];
    if (m?.role === 'user') return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
  }
  return '';
}
