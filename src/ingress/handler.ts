import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { normalizeMatchPath } from '../config/schema/hooks.js';
import { HttpError, type HttpErrorCode, StoreError, storeUnavailable } from '../errors.js';
import type { FeedSink } from '../feed.js';
import type { CompletionWaiters } from '../hooks/completion.js';
import type { HooksContext } from '../hooks/context.js';
import { dispatch, type DispatchRequest, type RuntimeSignals } from '../hooks/dispatch.js';
import { extractIdempotencyKey, idempotencyClaim } from '../hooks/idempotency.js';
import { createHookRoutes, type HookRequest, type HookRoutes, type SignatureChecks } from '../hooks/routes.js';
import type { IngressStore, ReceivedHook } from '../store/types.js';
import { logPath } from '../text-safe.js';
import { announceReceived } from './announce.js';
import { extractToken, isExpired, tokenSetOf, type TokenSet, withoutCredentials } from './auth.js';
import { isFormContentType, LazyPayload, readBody } from './body.js';
import { addressBucket, ClientIpResolver } from '../net/client-ip.js';
import { AuthFailureLimiter } from '../net/limiter.js';
import { RepeatLimitedLog } from '../net/log-repeats.js';
import type { IngressPressure } from './pressure.js';
import { knownRoutes, pathClass, RefusalAggregator } from './refusals.js';
import { FORBIDDEN, FORBIDDEN_SOURCE, type Gate, type RouteLimit, RouteLimits, routeRateLimited, UNDECIDED } from './route-limits.js';
import { closedSignal, sendEmptyOk, sendError, sendErrorDiscardingBody, sendJson, sendNoContent } from './respond.js';

export interface HandlerDeps {
  store: IngressStore;
  signals: RuntimeSignals;
  /** Answers `waitForCompletion` requests once their run ends (the runtime's waiters). */
  completions: CompletionWaiters;
  logger: Logger;
  /** Every route under `hooks.path` (default: a fresh set, compiled on its first request). */
  routes?: HookRoutes;
  /** The live feed: every answered request is announced (announce.ts). */
  feed?: FeedSink;
  /** Told of every request, to tell the runtime when the ingress is saturated (pressure.ts). */
  pressure?: IngressPressure;
}

/** Per config generation: rebuilt on reload; the limiter's memory is kept across reloads. */
export class IngressState {
  ctx!: HooksContext;
  ipResolver!: ClientIpResolver;
  /** hooks.token and hooks.tokens of the same generation as `ctx` (both are read in the synchronous start of a request). */
  tokens!: TokenSet;
  readonly limiter: AuthFailureLimiter;
  /** `allowFrom` / `rateLimit` of the routes (route-limits.ts); null when no route has one. Buckets survive reloads. */
  limits: RouteLimits | null = null;

  constructor(ctx: HooksContext) {
    this.limiter = new AuthFailureLimiter(ctx.config.hooks.authFailureLimit);
    this.update(ctx);
  }

  update(ctx: HooksContext): void {
    this.ctx = ctx;
    this.ipResolver = new ClientIpResolver(ctx.config.gateway.trustedProxies);
    this.tokens = tokenSetOf(ctx.config.hooks);
    this.limiter.setLimits(ctx.config.hooks.authFailureLimit);
    this.limits = RouteLimits.compile(ctx.config.hooks, this.limits, Date.now());
  }
}

const NOT_FOUND = new HttpError(404, 'not_found', 'no hook at this path');
const EMPTY_QUERY: URLSearchParams = new URLSearchParams();

/** A refusal, counted (not stored one by one: see refusals.ts). */
type Refuse = (status: number, code: HttpErrorCode) => void;

export type Handler = ((req: IncomingMessage, res: ServerResponse) => Promise<void>) & {
  /** Store the refusal counts of the current window now (at a stop, before the store closes). */
  flushRefusals(): void;
};

/**
 * The request handler, in the contract's order: query token → method → the route's allowFrom → credentials → the
 * route's rateLimit → body → route → validation and policy → durable commit → answer.
 */
export function createHandler(state: IngressState, deps: HandlerDeps): Handler {
  const { store, signals, completions, logger, feed, pressure } = deps;
  const routes = deps.routes ?? createHookRoutes({ logger });
  // Per-request failure lines go through here: a flood or a store outage logs one line per kind and a summary.
  const log = new RepeatLimitedLog(logger);
  const storeFailed = (what: string) => (err: unknown) =>
    log.warn(String((err as { code?: unknown }).code ?? 'store'), { err: (err as Error).message }, `could not record ${what}`);

  const record = (rec: ReceivedHook) => {
    store.recordReceived(rec).catch(storeFailed('a received hook'));
  };
  const refusals = new RefusalAggregator(state.ctx.config.hooks.refusals, (window) => {
    store.recordRefusals(window, state.ctx.config.hooks.refusals.maxStoredWindows).catch(storeFailed('refusal counts'));
  });
  const refuser = (ctx: HooksContext, now: number, subPath: string, clientIp: string, started: number): Refuse => (status, code) => {
    refusals.setLimits(ctx.config.hooks.refusals);
    refusals.add(now, status, code, pathClass(subPath, knownRoutes(ctx.config.hooks)), addressBucket(clientIp));
    announceReceived(feed, { hooks: ctx.config.hooks, subPath, clientIp, started, at: now, status, code, mappingId: null });
  };
  const refuseEarly = (ctx: HooksContext, req: IncomingMessage, pathname: string, started: number): Refuse =>
    refuser(ctx, Date.now(), normalizeMatchPath(pathname.slice(ctx.basePath.length)), state.ipResolver.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for']), started);

  const handle = async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    pressure?.arrived();
    const ctx = state.ctx; // one generation for the whole request, even if a reload lands meanwhile
    const limits = state.limits; // of the same generation (update() sets both)
    const url = req.url ?? '/';
    const qIndex = url.indexOf('?');
    const pathname = qIndex < 0 ? url : url.slice(0, qIndex);
    const base = ctx.basePath;

    if (!ctx.config.hooks.enabled || !(pathname === base || pathname.startsWith(`${base}/`))) {
      return sendError(res, NOT_FOUND);
    }
    const query = qIndex < 0 ? EMPTY_QUERY : new URLSearchParams(url.slice(qIndex + 1));
    if (qIndex >= 0 && query.has('token')) {
      refuseEarly(ctx, req, pathname, started)(400, 'query_token');
      return sendError(
        res,
        new HttpError(400, 'query_token', 'the hook token must be sent in the Authorization: Bearer header (or x-hookgate-token), never in the query string'),
      );
    }
    if (req.method !== 'POST') {
      refuseEarly(ctx, req, pathname, started)(405, 'method_not_allowed');
      return sendError(res, new HttpError(405, 'method_not_allowed', 'only POST is accepted here'), { allow: 'POST' });
    }

    const subPath = normalizeMatchPath(pathname.slice(base.length));
    const now = Date.now();
    const clientIp = state.ipResolver.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for']);
    const tokens = state.tokens;
    // Constant time over every listed token; an expired one is refused like a wrong one (its id may be logged).
    const presented = tokens.find(extractToken(req.headers));
    const expired = presented !== undefined && isExpired(presented, now);
    const tokenVerified = presented !== undefined && !expired;
    const tokenId = tokenVerified ? presented.id : null;
    const received = (status: number, code: HttpErrorCode | null): ReceivedHook => ({
      at: now,
      method: 'POST',
      path: subPath,
      clientIp,
      status,
      code,
      eventIds: [],
      runIds: [],
      mappingId: null,
      durationMs: performance.now() - started,
      tokenId,
    });
    const refuse = refuser(ctx, now, subPath, clientIp, started);
    const announce = (status: number, code: string | null, mappingId: string | null, body?: Record<string, unknown>) => {
      // Without a feed (admin listener off) nothing is built: this runs for every answered request.
      if (feed) announceReceived(feed, { hooks: ctx.config.hooks, subPath, clientIp, started, at: now, status, code, mappingId, ...(body ? { body } : {}) });
    };

    const plan = routes.plan(ctx, subPath);
    // Per-route limits, before the body (route-limits.ts): the address list before authentication, the bucket after.
    // (The token was compared above, for the received record's token id; a refused address never counts as an auth failure.)
    let gate: Gate = null;
    let taken = false;
    if (limits !== null && plan.auth !== 'oidc') {
      gate = limits.gate(subPath, req.headers, clientIp);
      if (gate === FORBIDDEN) return refuseByLimit(res, log, refuse, FORBIDDEN_SOURCE, subPath, clientIp);
    }
    if (plan.auth === 'token') {
      if (!tokenVerified) return rejectAuth(res, state, clientIp, now, log, refuse, expired ? `hook ${logPath(subPath)} rejected: expired token ${presented?.id}` : undefined);
      state.limiter.reset(clientIp);
      if (gate !== null && gate !== UNDECIDED && gate.bucket !== undefined) {
        const wait = gate.bucket.take(now);
        if (wait > 0) return refuseByLimit(res, log, refuse, routeRateLimited(wait), subPath, clientIp);
        taken = true;
      }
    } else if (plan.auth === 'oidc') {
      // The Gmail push receiver: the push's OIDC token (in the header) is checked before the body is read.
      if (state.limiter.retryAfter(clientIp, now) > 0) return rejectAuth(res, state, clientIp, now, log, refuse);
      const check = await plan.verify(req.headers, now);
      if (!check.ok) return rejectAuth(res, state, clientIp, now, log, refuse, `hook ${logPath(subPath)} rejected: ${check.reason}`, 'oidc');
      state.limiter.reset(clientIp);
    } else if (!tokenVerified && state.limiter.retryAfter(clientIp, now) > 0) {
      // Locked out: refused before its body is read (rejectAuth answers 429 and closes the connection).
      return rejectAuth(res, state, clientIp, now, log, refuse);
    }
    // Otherwise deferred: the mapping that matches decides whether its signature or the token authenticates it.
    // A signed route's bucket is only looked at here (its token is taken once the signature verified): an exhausted
    // route refuses unread bodies, and forgeries cannot spend it.
    if (plan.auth === 'signature' && gate !== null && gate !== UNDECIDED && gate.bucket !== undefined) {
      const wait = gate.bucket.peek(now);
      if (wait > 0) return refuseByLimit(res, log, refuse, routeRateLimited(wait), subPath, clientIp);
    }

    try {
      // Invites an `Expect: 100-continue` upload only now, after the token or lockout check.
      const rawBody = await readBody(req, plan.bodyLimit, ctx.config.hooks.bodyTimeoutMs, res);
      // Form bodies (Slack slash commands, Interactivity) only where a signature can authenticate the request; the
      // signature is checked over `rawBody`, never over the parsed form.
      const form = plan.auth === 'signature' && isFormContentType(req.headers['content-type']);
      const body = new LazyPayload(rawBody, form);
      // Signatures are verified over the raw bytes before any parse: without a valid token, a body that no candidate
      // verifies is refused unparsed. Measured on 240 KB forgeries (operations.md): 1.85 → 0.90 ms CPU per 401, and
      // 1.70 → 0.35 ms per 429 once locked out (refused before the body); a wake's p95 under 8 such clients 74 → 19 ms.
      const signatures = plan.auth === 'signature' && !tokenVerified ? plan.verify(rawBody, req.headers, now, body) : undefined;
      if (signatures && !signatures.any) {
        return rejectAuth(res, state, clientIp, now, log, refuse, `hook ${logPath(subPath)} rejected: ${signatures.reason}`, true);
      }
      const payload = body.get();

      const hookRequest = new IngressHookRequest(ctx, subPath, payload, rawBody, req.headers, query, now, tokenVerified, form);
      if (signatures) hookRequest.signatures = signatures;
      const routed = await routes.resolve(hookRequest);
      if (routed.kind === 'none') throw NOT_FOUND;
      if (routed.kind === 'unauthorized') {
        return rejectAuth(res, state, clientIp, now, log, refuse, `hook ${logPath(subPath)} rejected: ${routed.reason}`, routed.signature);
      }
      if (plan.auth === 'signature') state.limiter.reset(clientIp);
      if (gate !== null && !taken && routed.kind !== 'gmailPush') afterRouting(gate, limits!.forMapping(routed.mappingId), clientIp, now, log, subPath);
      if (routed.kind === 'gmailPush') {
        const { duplicate } = await store.recordGmailPush({ ...routed.push, receivedAt: now }).catch((err: unknown) => {
          throw err instanceof StoreError ? storeUnavailable() : err;
        });
        record({ ...received(200, null), code: duplicate ? 'duplicate' : null, mappingId: 'gmail-push' });
        sendJson(res, 200, duplicate ? { ok: true, duplicate: true } : { ok: true });
        if (!duplicate) signals.gmailPushed?.(routed.push.account);
        return;
      }
      if (routed.kind === 'reply') {
        record({ ...received(routed.status, null), mappingId: routed.mappingId });
        announce(routed.status, null, routed.mappingId);
        return sendJson(res, routed.status, routed.body);
      }
      if (routed.kind === 'skip') {
        record({ ...received(routed.emptyAnswer ? 200 : 204, null), mappingId: routed.mappingId });
        announce(routed.emptyAnswer ? 200 : 204, null, routed.mappingId);
        return routed.emptyAnswer ? sendEmptyOk(res) : sendNoContent(res);
      }
      const { actions, fanOut, mappingId, deliveryId, dropped, emptyAnswer, waitForCompletion, unknownFields } = routed; // never empty: an empty fan-out is a `skip`
      if (unknownFields && logger.isLevelEnabled('debug')) logger.debug({ path: subPath, client: clientIp, unknownFields }, 'request fields hookgate does not read');

      const key = extractIdempotencyKey(req.headers, payload, deliveryId);
      const idempotency =
        key === undefined ? undefined : idempotencyClaim(subPath, key, rawBody, { sender: addressBucket(clientIp), hooks: ctx.config.hooks }, now);
      // Built by assignment, not spreads: this is every accepted request's path (each spread is an object to collect).
      const rec = received(0, null);
      rec.mappingId = mappingId;
      if (unknownFields) rec.unknownFields = unknownFields;
      const request: DispatchRequest = { actions, idempotency, received: rec, fanOut };
      if (dropped) request.dropped = dropped;
      if (waitForCompletion) request.wait = { completions, signal: closedSignal(res) };
      const answer = await dispatch(ctx, store, signals, request);
      if (emptyAnswer && answer.status >= 200 && answer.status < 300) sendEmptyOk(res);
      else sendJson(res, answer.status, answer.body);
      announce(answer.status, answer.duplicate ? 'duplicate' : null, mappingId, answer.body);
      if (logger.isLevelEnabled('debug')) logger.debug({ path: subPath, client: clientIp, status: answer.status, duplicate: answer.duplicate ?? false }, 'hook accepted');
    } catch (err) {
      if (err instanceof HttpError) {
        // The store records a 409 itself (in the transaction that found the conflict): not a second time here.
        if (err.code !== 'idempotency_conflict') refuse(err.status, err.code);
        else announce(err.status, err.code, null);
        if (err.status === 503) log.error(err.code, { path: logPath(subPath) }, 'store unavailable: hook refused with 503');
        if (err.status === 413) return sendErrorDiscardingBody(req, res, err);
        const closing = err.status === 408 || err.code === 'body_aborted';
        return sendError(res, err, closing ? { connection: 'close' } : undefined);
      }
      log.error('internal', { err, path: logPath(subPath) }, 'hook handler failed');
      refuse(500, 'internal');
      return sendError(res, new HttpError(500, 'internal', 'internal error; nothing was accepted'));
    }
  };
  return Object.assign(handle, { flushRefusals: () => refusals.flush() });
}

/**
 * A request as the routes see it. A class, not an object literal with a getter: a literal's getter is a new closure
 * and accessor pair on every request, and this is every accepted request's path.
 */
class IngressHookRequest implements HookRequest {
  signatures?: SignatureChecks;
  private stripped: IncomingHttpHeaders | undefined;

  constructor(
    readonly ctx: HooksContext,
    readonly subPath: string,
    readonly payload: Record<string, unknown>,
    readonly rawBody: Buffer,
    readonly rawHeaders: IncomingHttpHeaders,
    readonly query: URLSearchParams,
    readonly now: number,
    readonly tokenVerified: boolean,
    readonly form: boolean,
  ) {}

  /** Without the credential headers. Only mappings read them (templates, transforms): `/wake` and `/agent` do not pay for the copy. */
  get headers(): IncomingHttpHeaders {
    return (this.stripped ??= withoutCredentials(this.rawHeaders));
  }
}

/**
 * The limits of a route known only now (UNDECIDED: a `match.source` mapping), or the bucket of a signed route, applied
 * once the request is authenticated and routed: throws the 403 or 429 (answered and counted like any refusal).
 */
function afterRouting(
  gate: Exclude<Gate, null | typeof FORBIDDEN>,
  matched: RouteLimit | undefined,
  clientIp: string,
  now: number,
  log: RepeatLimitedLog,
  subPath: string,
): void {
  const limit = gate === UNDECIDED ? matched : gate;
  if (limit === undefined) return;
  let err: HttpError | undefined;
  if (gate === UNDECIDED && !limit.allows(clientIp)) err = FORBIDDEN_SOURCE;
  else {
    const wait = limit.bucket?.take(now) ?? 0;
    if (wait > 0) err = routeRateLimited(wait);
  }
  if (err) {
    logLimitRefusal(log, err, subPath, clientIp);
    throw err;
  }
}

function logLimitRefusal(log: RepeatLimitedLog, err: HttpError, subPath: string, clientIp: string): void {
  log.warn(`route_${err.code}`, { path: logPath(subPath), client: clientIp }, err.status === 403 ? 'hook refused: client address not in allowFrom' : "hook refused: the route's rate limit is reached");
}

/**
 * A request refused by its route's limits before its body was read: counted, logged once per kind (RepeatLimitedLog),
 * answered with `Connection: close` so an unread body is not uploaded.
 */
function refuseByLimit(res: ServerResponse, log: RepeatLimitedLog, refuse: Refuse, err: HttpError, subPath: string, clientIp: string): void {
  logLimitRefusal(log, err, subPath, clientIp);
  refuse(err.status, err.code);
  sendError(res, err, { connection: 'close' });
}

function rejectAuth(
  res: ServerResponse,
  state: IngressState,
  clientIp: string,
  now: number,
  log: RepeatLimitedLog,
  refuse: Refuse,
  /** Why (signature paths): logged at warn for a 401, not for a 429 (a locked-out client must not flood the log). */
  reason?: string,
  signature: boolean | 'oidc' = false,
): void {
  const retryAfter = state.limiter.retryAfter(clientIp, now);
  if (retryAfter > 0) {
    // Counted in memory only, like every refusal: a locked-out client cannot make us write. The connection is closed:
    // an unread body is not uploaded, and a locked-out client keeps no connection open.
    refuse(429, 'rate_limited');
    return sendError(res, new HttpError(429, 'rate_limited', `too many failed authentications; retry after ${retryAfter} s`), {
      'retry-after': String(retryAfter),
      connection: 'close',
    });
  }
  if (reason !== undefined) log.warn('unauthorized', { client: clientIp }, reason);
  const lockedFor = state.limiter.fail(clientIp, now);
  if (lockedFor > 0) log.warn('rate_limited', { client: clientIp, retryAfterSeconds: lockedFor }, 'hook auth throttled: client locked out');
  refuse(401, 'unauthorized');
  const what = signature === 'oidc' ? 'missing or invalid OIDC token' : signature ? 'missing or invalid signature' : 'missing or invalid hook token';
  sendError(res, new HttpError(401, 'unauthorized', what));
}
