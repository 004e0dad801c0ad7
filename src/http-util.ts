/** Small HTTP rules shared by the model providers and the channels: one home each. */

/** 408, 429 and 5xx may succeed later; any other 4xx means the request itself is wrong and will stay wrong. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * A response body as UTF-8, at most `limit` bytes: past the limit the stream is cancelled (the rest is never read
 * or buffered) and `truncated` is set. A failing stream rejects, for the caller to classify.
 */
export async function readCapped(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<{ text: string; truncated: boolean }> {
  if (!body) return { text: '', truncated: false };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: Buffer.concat(chunks).toString('utf8'), truncated: false };
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      chunks.push(value.subarray(0, value.byteLength - (size - limit)));
      return { text: Buffer.concat(chunks).toString('utf8'), truncated: true };
    }
    chunks.push(value);
  }
}

/** `base` + `/` + `path`, with exactly one slash between them whatever the config wrote. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** What a system error code looks like (ECONNREFUSED, UND_ERR_SOCKET, ERR_TLS_CERT_ALTNAME_INVALID...). */
const CODE_SHAPE = /^[A-Z0-9_]{1,40}$/;

/**
 * The system error code behind a failed request: the first `code` on the error, down its `cause` chain and into the
 * `errors` of an AggregateError (happy eyeballs: fetch tried ::1 and 127.0.0.1 and both refused). Only a code,
 * never a message: messages can contain the URL, and URLs can carry credentials. Undefined when there is none.
 */
export function errorCode(err: unknown, depth = 0): string | undefined {
  if (!err || typeof err !== 'object' || depth > 5) return undefined;
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && CODE_SHAPE.test(e.code)) return e.code;
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const c = errorCode(inner, depth + 1);
      if (c) return c;
    }
  }
  return errorCode(e.cause, depth + 1);
}

/** Whether a host name or address (`[::1]` brackets allowed) is this machine's loopback: traffic that never leaves it. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return (
    h === 'localhost' ||
    h.endsWith('.localhost') ||
    h === '::1' ||
    /^127\.\d+\.\d+\.\d+$/.test(h) ||
    h === '::ffff:127.0.0.1'
  );
}

/**
 * `value` as exactly one path segment: percent-encoded, and refused (`undefined`) when empty, `.` or `..`, which
 * `encodeURIComponent` leaves as they are and a URL parser then drops or resolves against the path around them
 * (`channels/../messages` is `messages`). A recipient put into a platform's path goes through here.
 */
export function onePathSegment(value: string): string | undefined {
  return value === '' || value === '.' || value === '..' ? undefined : encodeURIComponent(value);
}

/**
 * The token of an `Authorization: Bearer <token>` value (the scheme in any case), or undefined when the value is
 * absent, of another scheme, or blank after it. The ingress reads the hook token, the admin listener its token and a
 * `bearer` signature its secret through here.
 */
export function bearerToken(authorization: string | undefined): string | undefined {
  if (
    authorization &&
    authorization.length > 7 &&
    // The usual spelling first: it needs no lower-cased copy.
    (authorization.startsWith('Bearer ') || authorization.slice(0, 7).toLowerCase() === 'bearer ')
  ) {
    const t = authorization.slice(7).trim();
    if (t) return t;
  }
  return undefined;
}
