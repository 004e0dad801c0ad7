/** Small HTTP rules shared by the model providers and the channels: one home each. */

/** 408, 429 and 5xx may succeed later; any other 4xx means the request itself is wrong and will stay wrong. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
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
