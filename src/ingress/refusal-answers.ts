/**
 * Refusals: built by the stages of the hook request lifecycle (handler.ts), answered here: counted in memory (never
 * stored one by one: refusals.ts), announced on the live feed, logged once per kind, then written.
 */
import { HttpError } from '../errors.js';
import type { Scheme } from '../hooks/verifier.js';
import { addressBucket } from '../net/client-ip.js';
import { logPath } from '../text-safe.js';
import { type Exchange, Refusal } from './exchange.js';
import { announce, type Ingress } from './ingress-state.js';
import { knownRoutes, pathClass } from './refusals.js';
import { sendError, sendErrorDiscardingBody } from './respond.js';

/**
 * A failed authentication: 429 with `Retry-After` (and the connection closed) while the client is locked out,
 * else counted towards its lockout and answered 401 naming the credential. The reason is logged for a 401 only (a
 * locked-out client must not flood the log).
 */
export function rejectAuth(h: Ingress, x: Exchange, failure: { scheme: Scheme; reason: string | undefined }): Refusal {
  const limiter = h.deps.limiter;
  const retryAfter = limiter.retryAfter(x.clientIp, x.now);
  if (retryAfter > 0) {
    // Counted in memory only, like every refusal: a locked-out client cannot make us write. The connection is closed:
    // an unread body is not uploaded, and a locked-out client keeps no connection open.
    return new Refusal(
      new HttpError(429, 'rate_limited', `too many failed authentications; retry after ${retryAfter} s`, {
        'retry-after': String(retryAfter),
      }),
      'close',
    );
  }
  if (failure.reason !== undefined)
    h.log.warn(
      'unauthorized',
      { client: x.clientIp, reqId: x.reqId },
      `hook ${logPath(x.subPath)} rejected: ${failure.reason}`,
    );
  const lockedFor = limiter.fail(x.clientIp, x.now);
  if (lockedFor > 0)
    h.log.warn(
      'rate_limited',
      { client: x.clientIp, reqId: x.reqId, retryAfterSeconds: lockedFor },
      'hook auth throttled: client locked out',
    );
  return UNAUTHORIZED[failure.scheme];
}

const UNAUTHORIZED: Readonly<Record<Scheme, Refusal>> = {
  token: new Refusal(new HttpError(401, 'unauthorized', 'missing or invalid hook token')),
  signature: new Refusal(new HttpError(401, 'unauthorized', 'missing or invalid signature')),
  oidc: new Refusal(new HttpError(401, 'unauthorized', 'missing or invalid OIDC token')),
};

/** A refusal by the route's limits, logged once per kind (RepeatLimitedLog). */
export function limitRefusal(h: Ingress, x: Exchange, err: HttpError, connection: 'keep' | 'close'): Refusal {
  const what =
    err.status === 403
      ? 'hook refused: client address not in allowFrom'
      : "hook refused: the route's rate limit is reached";
  h.log.warn(`route_${err.code}`, { path: logPath(x.subPath), client: x.clientIp, reqId: x.reqId }, what);
  return new Refusal(err, connection);
}

const INTERNAL = new HttpError(500, 'internal', 'internal error; nothing was accepted');

/** A thrown error as a refusal: the HttpErrors of the body, the parse, the routes and the commit; anything else is a 500. */
export function refusalOf(h: Ingress, x: Exchange, err: unknown): Refusal {
  if (!(err instanceof HttpError)) {
    h.log.error('internal', { err, path: logPath(x.subPath), reqId: x.reqId }, 'hook handler failed');
    return new Refusal(INTERNAL);
  }
  if (err.status === 503)
    h.log.error(err.code, { path: logPath(x.subPath), reqId: x.reqId }, 'store unavailable: hook refused with 503');
  // The store records a 409 itself (in the transaction that found the conflict): announced, not counted here.
  const tally = err.code === 'idempotency_conflict' ? 'announced' : 'counted';
  if (err.status === 413) return new Refusal(err, 'discard', tally);
  return new Refusal(err, err.status === 408 || err.code === 'body_aborted' ? 'close' : 'keep', tally);
}

const CLOSE = { connection: 'close' } as const;

/** Answer a refusal: counted (not stored one by one: refusals.ts) and announced, then the error written. */
export function answerRefusal(h: Ingress, x: Exchange, r: Refusal): void {
  const err = r.error;
  if (r.tally === 'counted') {
    const hooks = x.ctx.config.hooks;
    h.refusals.setLimits(hooks.refusals);
    h.refusals.add(x.now, err.status, err.code, pathClass(x.subPath, knownRoutes(hooks)), addressBucket(x.clientIp));
  }
  if (r.tally !== 'none') announce(h, x, err.status, err.code, null);
  if (r.connection === 'discard') return sendErrorDiscardingBody(x.req, x.res, err, x.answerHeaders());
  sendError(x.res, err, x.answerHeaders(r.connection === 'close' ? CLOSE : undefined));
}
