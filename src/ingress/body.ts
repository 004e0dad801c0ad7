import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { HttpError } from '../errors.js';
import { parseFormObject } from '../form-body.js';

const EMPTY = Buffer.alloc(0);

/** Node's own test for `Expect: 100-continue` (HTTP/1.1, the token anywhere in the value), as its `checkContinue`. */
const CONTINUE_RE = /(?:^|\W)100-continue(?:$|\W)/i;

/** Requests whose client was sent `100 Continue` (by `readBody`). */
const invited = new WeakSet<IncomingMessage>();

/**
 * Whether the client is waiting for `100 Continue` before it sends its body, and has not been sent one: an answer
 * written now must close the connection (the body, never invited, may still follow and would be read as the next
 * request; respond.ts `sendError`).
 */
export function awaitsContinue(req: IncomingMessage): boolean {
  const expect = req.headers.expect;
  return expect !== undefined && req.httpVersion === '1.1' && !invited.has(req) && CONTINUE_RE.test(expect);
}

/** Called once with the body, or with the refusal (413, 408, 400) that ended its read. */
export type BodyCallback = (err: HttpError | undefined, body?: Buffer) => void;

/**
 * Reads the request body into one Buffer, bounded in size and time, and calls `done` once with it or its refusal:
 * - a Content-Length over `maxBytes` → 413 before a byte is read;
 * - streaming past `maxBytes` → 413 at once; what was read is dropped and the rest is not buffered;
 * - no complete body within `timeoutMs` → 408.
 * A refusal leaves the request paused: the caller answers with `Connection: close`. `done` may be called before
 * `readBody` returns (a declared size over the limit, or an empty body). A callback, not a promise: the handler
 * waits on it for every request, and a promise (its executor, its resolving functions, the reaction and a microtask,
 * and the `then` looked up on the Buffer it is resolved with) cost ~470 bytes and ~1,100 instructions of a wake.
 * A client that sent `Expect: 100-continue` is sent `100 Continue` on `res` here, after the Content-Length check:
 * calling `readBody` is the decision to read the body, so every check that can refuse a request before its body
 * (token, lockout, declared size) has passed, and a refused client is never invited to upload.
 */
export function readBody(
  req: IncomingMessage,
  maxBytes: number,
  timeoutMs: number,
  res: { writeContinue(): void } | undefined,
  done: BodyCallback,
): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined) {
    const n = Number(declared);
    if (Number.isFinite(n) && n > maxBytes) return done(tooLarge(maxBytes));
    if (n === 0) return done(undefined, EMPTY);
  }
  if (res && awaitsContinue(req)) {
    invited.add(req);
    res.writeContinue();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (err: HttpError | undefined, body?: Buffer) => {
    if (finished) return;
    finished = true;
    bodyDeadlines.remove(clock);
    // Once the body has ended, none of the listeners can fire to any effect (`finished`), and the request is dropped
    // with them: they are removed only on a refusal, whose request may still stream (three removals per request).
    if (!err) return done(undefined, body);
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('error', onAborted);
    chunks.length = 0;
    req.pause();
    done(err);
  };
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBytes) return finish(tooLarge(maxBytes));
    chunks.push(chunk);
  };
  const onEnd = () => finish(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
  // A client that hangs up mid-body: Node destroys the request with an `aborted` error, emitted as `error` to a
  // request that has an error listener (its `aborted` event, deprecated, would be a third listener to add).
  const onAborted = () =>
    finish(new HttpError(400, 'body_aborted', 'the client closed the connection before the body was complete'));
  const clock: BodyClock = {
    deadline: 0,
    timeoutMs,
    expire: () => finish(new HttpError(408, 'body_timeout', `request body not received within ${timeoutMs} ms`)),
    prev: null,
    next: null,
  };
  bodyDeadlines.add(clock);
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onAborted);
}

/** A body being read: its deadline (0 until the first sweep after it started) and what to do once it passes. */
interface BodyClock {
  deadline: number;
  readonly timeoutMs: number;
  readonly expire: () => void;
  prev: BodyClock | null;
  next: BodyClock | null;
}

/** How often the deadlines of the bodies being read are checked, while any is. */
const SWEEP_MS = 10;

/**
 * The deadlines of the bodies being read, in one list checked by one interval timer while the list is not empty. A
 * timer per body (a `Timeout`, its async id, a list insert and a removal) cost ~600 instructions of a wake, and the
 * clock is read once per sweep instead of once per body: a body's time counts from the first sweep after its read
 * started, so it never times out early, and at most two sweeps late (more only while the event loop is blocked).
 */
class BodyDeadlines {
  private head: BodyClock | null = null;
  private timer: NodeJS.Timeout | undefined;

  add(c: BodyClock): void {
    c.next = this.head;
    if (this.head) this.head.prev = c;
    this.head = c;
    this.timer ??= setInterval(this.sweep, SWEEP_MS).unref();
  }

  remove(c: BodyClock): void {
    if (c.prev) c.prev.next = c.next;
    else if (this.head === c) this.head = c.next;
    if (c.next) c.next.prev = c.prev;
    c.prev = c.next = null;
  }

  private readonly sweep = (): void => {
    if (this.head === null) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = performance.now();
    for (let c: BodyClock | null = this.head; c !== null; ) {
      const next: BodyClock | null = c.next;
      if (c.deadline === 0) c.deadline = now + c.timeoutMs;
      else if (c.deadline <= now) c.expire(); // removes it
      c = next;
    }
  };
}

const bodyDeadlines = new BodyDeadlines();

/**
 * How much of a refused body is read and dropped before the connection is closed. Closing a socket whose client is
 * still uploading makes the kernel answer with a reset, and Node's fetch and http clients then report EPIPE instead
 * of the 413 (a sender that retries on network errors retries forever). Reading on lets every client read the
 * answer; the bound keeps a stranger from holding the connection open with an endless body.
 */
export const DISCARD_LIMITS = { maxBytes: 256 * 1024 * 1024, maxMs: 10_000 } as const;

/**
 * Reads and drops the rest of a request body without buffering it. Resolves true when the body ended within the
 * limits, false when they were hit (the caller then closes the connection under the client).
 */
export function discardBody(
  req: IncomingMessage,
  limits: { maxBytes: number; maxMs: number } = DISCARD_LIMITS,
): Promise<boolean> {
  if (req.complete || awaitsContinue(req)) return Promise.resolve(true); // no body comes before `100 Continue`
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (complete: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      req.off('error', onClose);
      if (!complete) req.pause();
      resolve(complete);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limits.maxBytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(false);
    const timer = setTimeout(() => finish(false), limits.maxMs);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
    req.on('error', onClose);
    req.resume();
  });
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(413, 'payload_too_large', `request body exceeds ${maxBytes} bytes`);
}

/**
 * Empty or whitespace-only → `{}`; invalid JSON → 400 invalid_json; a non-object value → 400 invalid_payload.
 * A UTF-8 byte-order mark before the JSON is skipped (some Windows senders add one; OpenClaw accepts it too).
 */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {};
  const start = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  const text = body.toString('utf8', start);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    if (text.trim() === '') return {};
    throw new HttpError(400, 'invalid_json', `body is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(400, 'invalid_payload', 'body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/**
 * A request's payload, parsed (`parseFormObject` for forms, else `parseJsonObject`) at most once and only when first
 * asked for: on signature paths the body is parsed only after a signature verified it (or the token did), and a
 * verifier that reads an id from the signed body (Stripe, Slack) shares this parse with the handler.
 */
export class LazyPayload {
  private parsed: { ok: true; value: Record<string, unknown> } | { ok: false; err: unknown } | undefined;

  constructor(
    private readonly raw: Buffer,
    private readonly form: boolean,
  ) {}

  /** The payload; throws the parse's HttpError (invalid_json, invalid_payload). */
  get(): Record<string, unknown> {
    const p = this.parse();
    if (!p.ok) throw p.err;
    return p.value;
  }

  /** The payload, or null when the body is not an object: never throws. */
  peek(): Record<string, unknown> | null {
    const p = this.parse();
    return p.ok ? p.value : null;
  }

  private parse() {
    if (this.parsed === undefined) {
      try {
        this.parsed = { ok: true, value: this.form ? parseFormObject(this.raw) : parseJsonObject(this.raw) };
      } catch (err) {
        this.parsed = { ok: false, err };
      }
    }
    return this.parsed;
  }
}
