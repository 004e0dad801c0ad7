/**
 * `request` over Node's own `http` module, for a plain `http:` URL when the caller asks (`plainHttp`): the CLI's one
 * call to the service on this machine. `fetch` loads Node's bundled undici on first use, a large part of a short
 * command's start-up; this path does not, and builds the answer's `Headers` (from that bundle too) only if read.
 * Same outcome, same size cap, no redirect followed (a 3xx is the outcome, as `fetch` with `redirect: manual`).
 */
import { type IncomingMessage, request as httpRequest, STATUS_CODES } from 'node:http';
import { type AbortLike, deadline } from '../deadline.js';
import { attemptFailure, type HttpOutcome, type OutboundInit, parseJson } from './client.js';

interface PlainOptions {
  signal?: AbortLike | undefined;
  timeoutMs?: number | undefined;
  maxBytes: (status: number) => number;
}

export async function plainRequest(url: string, init: OutboundInit, opts: PlainOptions): Promise<HttpOutcome> {
  const outer = opts.signal;
  const limit = deadline(outer, opts.timeoutMs, () => new DOMException('the request timed out', 'TimeoutError'));
  try {
    // Told apart without naming the global `Headers`: its first read loads the bundled undici this path avoids.
    const headers = isPlainHeaders(init.headers) ? (init.headers ?? {}) : Object.fromEntries(init.headers.entries());
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const method = init.method ?? (init.body === undefined ? 'GET' : 'POST');
      const req = httpRequest(url, { method, headers, signal: limit.signal }, resolve);
      req.on('error', reject);
      req.end(init.body);
    });
    const status = res.statusCode ?? 0;
    const max = opts.maxBytes(status);
    if (max === 0) res.destroy();
    const { text, truncated } = max === 0 ? { text: '', truncated: false } : await readBody(res, max);
    return new PlainResponse(status, res.statusMessage || STATUS_CODES[status] || '', res.rawHeaders, text, truncated);
  } catch (err) {
    return attemptFailure(err, outer, limit);
  } finally {
    limit.dispose();
  }
}

function isPlainHeaders(h: OutboundInit['headers']): h is Record<string, string> | undefined {
  return h === undefined || typeof (h as { entries?: unknown }).entries !== 'function';
}

async function readBody(res: IncomingMessage, max: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > max) {
      chunks.push(chunk.subarray(0, chunk.byteLength - (size - max)));
      res.destroy();
      return { text: Buffer.concat(chunks).toString('utf8'), truncated: true };
    }
    chunks.push(chunk);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated: false };
}

/** An HTTP answer whose `headers` are made on first read. */
class PlainResponse {
  readonly kind = 'response' as const;
  readonly json: unknown;
  private made: Headers | undefined;
  constructor(
    readonly status: number,
    readonly statusText: string,
    private readonly raw: string[],
    readonly text: string,
    readonly truncated: boolean,
  ) {
    this.json = truncated ? undefined : parseJson(text);
  }

  get headers(): Headers {
    if (!this.made) {
      this.made = new Headers();
      for (let i = 0; i + 1 < this.raw.length; i += 2) this.made.append(this.raw[i]!, this.raw[i + 1]!);
    }
    return this.made;
  }
}
