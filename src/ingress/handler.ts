/**
 * The hook request handler: `handleRequest` runs the request lifecycle's stages in order, one small function each,
 * top to bottom in this file (the chain and each stage's answers: docs/architecture.md, "The request lifecycle").
 * Authentication goes through the route's one `Verifier` (hooks/verifier.ts); refusals are answered in one place
 * (refusal-answers.ts); what every request shares is in ingress-state.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { normalizeMatchPath } from '../config/schema/hooks.js';
import { HttpError, StoreError, storeUnavailable } from '../errors.js';
import { dispatch, type DispatchAnswer, type DispatchRequest } from '../hooks/dispatch.js';
import { extractIdempotencyKey, idempotencyClaim } from '../hooks/idempotency.js';
import { type RouteResult, SENDER_ANSWERS } from '../hooks/routes.js';
import { validHookToken, type Verdict } from '../hooks/verifier.js';
import { logPath } from '../text-safe.js';
import { extractToken } from './auth.js';
import { type BodyCallback, readBody } from './body.js';
import { addressBucket } from '../net/client-ip.js';
import type { IngressContext } from './context.js';
import { Exchange, Refusal } from './exchange.js';
import { FORBIDDEN, FORBIDDEN_SOURCE, routeRateLimited, UNDECIDED } from './route-limits.js';
import { closedSignal, sendError, sendFixedOk, sendJson, sendJsonAscii, sendNoContent } from './respond.js';
import { announce, type HandlerDeps, Ingress, record } from './ingress-state.js';
import { answerRefusal, limitRefusal, refusalOf, rejectAuth } from './refusal-answers.js';

export type { HandlerDeps };

/**
 * Handles one request of the hook listener; `ended` is called once its handling is over (answered, or failed):
 * the listener counts the requests in hand by it (server.ts).
 */
export type Handler = ((req: IncomingMessage, res: ServerResponse, ended?: () => void) => void) & {
  /** Store the refusal counts of the current window now (at a stop, before the store closes). */
  flushRefusals(): void;
};

export function createHandler(generation: () => IngressContext, deps: HandlerDeps): Handler {
  const ingress = new Ingress(generation, deps);
  const handle = (req: IncomingMessage, res: ServerResponse, ended: () => void = NOTHING) =>
    handleRequest(ingress, req, res, ended);
  return Object.assign(handle, { flushRefusals: () => ingress.refusals.flush() });
}

const NOTHING = () => {};

/**
 * The request lifecycle, one stage after the other; each stage returns the next one's input, or a `Refusal`
 * (undefined: go on). The chain and the status each stage can answer: docs/architecture.md, "The request lifecycle".
 * Where a stage may have to wait (a verifier or a route that answers later, the body, the commit), the next one is
 * called through `next`: at once when the value is there, else when its promise settles. Callbacks, not `await`:
 * an async function's frame and its promise would be kept for every request while its body arrives and its batch
 * commits, and each `await` costs a microtask.
 */
function handleRequest(h: Ingress, req: IncomingMessage, res: ServerResponse, ended: () => void): void {
  const started = performance.now();
  h.deps.pressure?.arrived();
  const x = openExchange(h, req, res, started, ended);
  if (x === undefined) {
    sendError(res, NOT_FOUND); // not under the hooks' base path: not ours, not counted
    return ended();
  }
  run(h, x, checkRequest, undefined);
}

/** What a stage returns: `LATER` when it has handed the request on to a callback, else the request is over. */
// biome-ignore lint/suspicious/noConfusingVoidType: a stage that ends the request returns its answer function's void
type Step = void | typeof LATER;
const LATER = Symbol('later');
type Stage<T> = (h: Ingress, x: Exchange, input: T) => Step;

/** Call `stage` now with `value`, or once its promise settles (a rejection is answered as a refusal). */
function next<T>(h: Ingress, x: Exchange, value: T | Promise<T>, stage: Stage<T>): Step {
  if (!(value instanceof Promise)) return stage(h, x, value);
  value.then(
    (v) => run(h, x, stage, v),
    (err: unknown) => fail(h, x, err),
  );
  return LATER;
}

/** Run a stage from its start or a callback: what it throws is answered as a refusal; the request ends with it. */
function run<T>(h: Ingress, x: Exchange, stage: Stage<T>, input: T): void {
  let step: Step;
  try {
    step = stage(h, x, input);
  } catch (err) {
    return fail(h, x, err);
  }
  if (step !== LATER) x.ended();
}

/** A thrown error or a rejection, answered (refusalOf: an HttpError as it is, anything else a 500); the request ends. */
function fail(h: Ingress, x: Exchange, err: unknown): void {
  try {
    answerRefusal(h, x, refusalOf(h, x, err));
  } finally {
    x.ended();
  }
}

/** The checks before the body: the request line, the route, `allowFrom`, the lockout, then authentication. */
function checkRequest(h: Ingress, x: Exchange): Step {
  const refused = checkRequestLine(x) ?? matchRoute(h, x) ?? checkAllowFrom(h, x) ?? checkLockout(h, x);
  if (refused !== undefined || x.plan.verifier.needsBody) return beforeBody(h, x, refused);
  // The token answers at once: no promise to wait for on the wake path (OIDC's is one).
  return next(h, x, authenticate(h, x), beforeBody);
}

/** The route's rate limit, then the body. */
function beforeBody(h: Ingress, x: Exchange, refused: Refusal | undefined): Step {
  refused ??= takeRouteToken(h, x);
  if (refused) return answerRefusal(h, x, refused);
  readPayload(x, (err, body) => (err ? fail(h, x, err) : run(h, x, withBody, body!)));
  return LATER;
}

/** The body read: authenticated by it when the route's verifier needs it (signatures). */
function withBody(h: Ingress, x: Exchange, body: Buffer): Step {
  x.receiveBody(body);
  return x.plan.verifier.needsBody ? next(h, x, authenticate(h, x), parseAndRoute) : parseAndRoute(h, x, undefined);
}

/** Parse, then route: a direct route answers at once, a mapped one may wait for its transform. */
function parseAndRoute(h: Ingress, x: Exchange, refused: Refusal | undefined): Step {
  refused ??= parse(x);
  if (refused) return answerRefusal(h, x, refused);
  return next(h, x, h.routes.route(x), answerRouted);
}

/** The routed request answered: refused, ignored, answered without a commit, or committed and then answered. */
function answerRouted(h: Ingress, x: Exchange, route: RouteResult): Step {
  const routed = resolveAction(h, x, route);
  if (routed instanceof Refusal) return answerRefusal(h, x, routed);
  if (routed.kind === 'unmatched') return answerUnmatched(h, x, routed);
  if (routed.kind === 'reply' || routed.kind === 'skip') return answerUncommitted(h, x, routed);
  const answer = commit(h, x, routed);
  // Counted while it waits for the store; one held for its run is not: that wait is the runtime's (pressure.ts).
  const pressure = routed.kind === 'actions' && routed.waitForCompletion ? undefined : h.deps.pressure;
  pressure?.commitStarted();
  answer.then(
    (a) => {
      pressure?.committed();
      run(h, x, () => answerCommitted(h, x, routed, a), undefined);
    },
    (err: unknown) => {
      pressure?.committed();
      fail(h, x, err);
    },
  );
  return LATER;
}

const NOT_FOUND = new HttpError(404, 'not_found', 'no hook at this path');
const QUERY_TOKEN = new Refusal(
  new HttpError(
    400,
    'query_token',
    'the hook token must be sent in the Authorization: Bearer header (or x-hookgate-token), never in the query string',
  ),
);
const METHOD_NOT_ALLOWED = new Refusal(
  new HttpError(405, 'method_not_allowed', 'only POST is accepted here', { allow: 'POST' }),
);
const EMPTY_QUERY: URLSearchParams = new URLSearchParams();

/** A request under the hooks' base path (with hooks enabled), with its sub-path and client address; else undefined. */
function openExchange(
  h: Ingress,
  req: IncomingMessage,
  res: ServerResponse,
  started: number,
  ended: () => void,
): Exchange | undefined {
  const ctx = h.generation();
  const url = req.url ?? '/';
  const qIndex = url.indexOf('?');
  const pathname = qIndex < 0 ? url : url.slice(0, qIndex);
  const base = ctx.basePath;
  if (!ctx.config.hooks.enabled || !(pathname === base || pathname.startsWith(`${base}/`))) return undefined;
  const query = qIndex < 0 ? EMPTY_QUERY : new URLSearchParams(url.slice(qIndex + 1));
  const subPath = subPathOf(pathname.slice(base.length));
  const clientIp = ctx.clientIps.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for']);
  return new Exchange(req, res, ctx, started, Date.now(), subPath, clientIp, query, h.deps.logger, ended);
}

/**
 * `normalizeMatchPath` of what follows the base path. The usual one (`/wake`: one slash, then a printable character,
 * and one at the end) gives the same without its trim and two regular expressions.
 */
function subPathOf(rest: string): string {
  const n = rest.length;
  if (n >= 2 && rest.charCodeAt(0) === 0x2f && edgeChar(rest.charCodeAt(1)) && edgeChar(rest.charCodeAt(n - 1)))
    return rest.slice(1);
  return normalizeMatchPath(rest);
}

/** Printable ASCII but `/`: neither trimmed nor stripped at either end of a sub-path. */
const edgeChar = (c: number): boolean => c > 0x20 && c < 0x7f && c !== 0x2f;

/** No `?token=` (400, even with a valid header: a token in a URL ends up in logs), POST only (405, not an auth failure). */
function checkRequestLine(x: Exchange): Refusal | undefined {
  if (x.query !== EMPTY_QUERY && x.query.has('token')) return QUERY_TOKEN;
  return x.req.method === 'POST' ? undefined : METHOD_NOT_ALLOWED;
}

/** Route match: the route's plan (its verifier, body limit, and whether route limits apply); never refuses. */
function matchRoute(h: Ingress, x: Exchange): undefined {
  x.plan = h.routes.plan(x.ctx, x.subPath);
  return undefined;
}

/**
 * The route's `allowFrom` (route-limits.ts), before authentication: the cheapest check, and a stranger outside the
 * list learns nothing about the credentials (403; never counted as an auth failure).
 */
function checkAllowFrom(h: Ingress, x: Exchange): Refusal | undefined {
  const limits = x.ctx.routeLimits;
  if (limits === null || !x.plan.limited) return undefined;
  x.gate = limits.gate(x.subPath, x.req.headers, x.clientIp);
  return x.gate === FORBIDDEN ? limitRefusal(h, x, FORBIDDEN_SOURCE, 'close') : undefined;
}

/**
 * Before any verifier runs: a client locked out by `hooks.authFailureLimit` is refused (429 with `Retry-After`, the
 * connection closed) unless it presents a valid hook token, so a locked-out forger's body is never read.
 */
function checkLockout(h: Ingress, x: Exchange): Refusal | undefined {
  x.hookToken = x.ctx.hookTokens.find(extractToken(x.req.headers));
  if (validHookToken(x) !== undefined || h.deps.limiter.retryAfter(x.clientIp, x.now) === 0) return undefined;
  return rejectAuth(h, x, { scheme: x.plan.verifier.scheme, reason: undefined });
}

/**
 * Authenticate, through the route's one verifier (hooks/verifier.ts): before the body is read when it does not need
 * it (the token, OIDC), after it and before any parse when it does (signatures; `needsBody`). A settled verdict resets
 * the client's failure count; an unsettled one (a signature-capable path) waits for the matching mapping (resolve).
 */
function authenticate(h: Ingress, x: Exchange): Refusal | undefined | Promise<Refusal | undefined> {
  const verdict = x.plan.verifier.verify(x);
  // The token and the signatures answer at once: no promise to wait for on the wake path (OIDC's is one).
  return verdict instanceof Promise ? verdict.then((v) => judge(h, x, v)) : judge(h, x, verdict);
}

/** The verdict applied: refused (rejectAuth), or the request's credentials recorded for the stages after. */
function judge(h: Ingress, x: Exchange, verdict: Verdict): Refusal | undefined {
  if (!verdict.ok) return rejectAuth(h, x, verdict);
  x.verdict = verdict;
  x.tokenVerified = verdict.tokenId !== null;
  if (verdict.signatures) x.signatures = verdict.signatures;
  if (verdict.settled) h.deps.limiter.reset(x.clientIp);
  return undefined;
}

/**
 * The route's rate limit, before the body: a token is taken once the request is authenticated for good, so a sender
 * without credentials cannot spend the route's budget; a signature still to verify only looks (`peek`: an exhausted
 * route refuses unread bodies, and forgeries cannot spend it), and takes it once routed (`limitsAfterRouting`).
 */
function takeRouteToken(h: Ingress, x: Exchange): Refusal | undefined {
  const gate = x.gate;
  if (gate === null || gate === UNDECIDED || gate === FORBIDDEN || gate.bucket === undefined) return undefined;
  const settled = x.verdict?.settled === true;
  const wait = settled ? gate.bucket.take(x.now) : gate.bucket.peek(x.now);
  if (wait > 0) return limitRefusal(h, x, routeRateLimited(wait), 'close');
  x.taken = settled;
  return undefined;
}

/** Read the body: at most the plan's limit (413), within `bodyTimeoutMs` (408); invites `Expect: 100-continue` only now. */
function readPayload(x: Exchange, done: BodyCallback): void {
  readBody(x.req, x.plan.bodyLimit, x.ctx.config.hooks.bodyTimeoutMs, x.res, done);
}

/** Parse the body (once: a verifier may have parsed it already): a JSON object, or a form where allowed (400 thrown). */
function parse(x: Exchange): undefined {
  x.payload = x.body!.get();
  return undefined;
}

/**
 * Resolve the action (`HookRoutes.resolve`: validation and policy, 400 thrown; transforms, 500 thrown), then judge
 * it: nothing matched (404), the matching mapping's own authentication on a signature path (401), the limits known
 * only now. Anything else, `unmatched` included (a verified signature that no mapping takes), is authenticated: the
 * failure count is reset and the route's limits apply, as for an accepted request.
 */
function resolveAction(
  h: Ingress,
  x: Exchange,
  routed: RouteResult,
): Exclude<RouteResult, { kind: 'none' | 'unauthorized' }> | Refusal {
  if (routed.kind === 'none') return new Refusal(NOT_FOUND);
  if (routed.kind === 'unauthorized')
    return rejectAuth(h, x, { scheme: routed.signature ? 'signature' : 'token', reason: routed.reason });
  if (!x.verdict!.settled) h.deps.limiter.reset(x.clientIp);
  return (
    limitsAfterRouting(h, x, routed.kind === 'gmailPush' || routed.kind === 'unmatched' ? null : routed.mappingId) ??
    routed
  );
}

/**
 * The limits of a route known only once routed (UNDECIDED: a `match.source` mapping), or the bucket of a signed
 * route, applied once the request is authenticated and routed (403 or 429, answered like any refusal).
 */
function limitsAfterRouting(h: Ingress, x: Exchange, mappingId: string | null): Refusal | undefined {
  const gate = x.gate;
  if (gate === null || gate === FORBIDDEN || x.taken) return undefined;
  const limit = gate === UNDECIDED ? x.ctx.routeLimits!.forMapping(mappingId) : gate;
  if (limit === undefined) return undefined;
  if (gate === UNDECIDED && !limit.allows(x.clientIp)) return limitRefusal(h, x, FORBIDDEN_SOURCE, 'keep');
  const wait = limit.bucket?.take(x.now) ?? 0;
  return wait > 0 ? limitRefusal(h, x, routeRateLimited(wait), 'keep') : undefined;
}

type Committable = Extract<RouteResult, { kind: 'actions' | 'gmailPush' }>;

/**
 * Commit, durably, before any answer: the actions (dispatch: idempotency, 409 on a reused key), or a verified Gmail
 * push. A store failure is 503 (`storeUnavailable`), never 2xx.
 */
function commit(h: Ingress, x: Exchange, routed: Committable): Promise<DispatchAnswer> {
  if (routed.kind === 'gmailPush') return commitGmailPush(h, x, routed.push);
  if (routed.unknownFields && h.deps.logger.isLevelEnabled('debug'))
    x.log.debug(
      { path: x.subPath, client: x.clientIp, unknownFields: routed.unknownFields },
      'request fields hookgate does not read',
    );
  const key = extractIdempotencyKey(x.req.headers, x.payload, routed.deliveryId);
  const idempotency =
    key === undefined
      ? undefined
      : idempotencyClaim(
          x.subPath,
          key,
          routed.identity?.() ?? x.rawBody,
          { sender: addressBucket(x.clientIp), hooks: x.ctx.config.hooks },
          x.now,
        );
  // Built by assignment, not spreads: this is every accepted request's path (each spread is an object to collect).
  const rec = x.received(0, null);
  rec.mappingId = routed.mappingId;
  if (routed.unknownFields) rec.unknownFields = routed.unknownFields;
  const request: DispatchRequest = { actions: routed.actions, idempotency, received: rec, fanOut: routed.fanOut };
  if (routed.dropped) request.dropped = routed.dropped;
  if (routed.waitForCompletion) request.wait = { completions: h.deps.completions, signal: closedSignal(x.res) };
  return dispatch(x.ctx, h.deps.store, h.deps.signals, request);
}

async function commitGmailPush(
  h: Ingress,
  x: Exchange,
  push: Extract<RouteResult, { kind: 'gmailPush' }>['push'],
): Promise<DispatchAnswer> {
  const { duplicate } = await h.deps.store.recordGmailPush({ ...push, receivedAt: x.now }).catch((err: unknown) => {
    throw err instanceof StoreError ? storeUnavailable() : err;
  });
  return duplicate
    ? { status: 200, body: { ok: true, duplicate: true }, duplicate }
    : { status: 200, body: { ok: true } };
}

/**
 * Answer a committed request (2xx): the dispatch's answer, or the one its sender expects (Slack's empty 200, Twilio's
 * TwiML); a Gmail push tells the fetcher.
 */
function answerCommitted(h: Ingress, x: Exchange, routed: Committable, answer: DispatchAnswer): void {
  if (routed.kind === 'gmailPush') {
    // Recorded here: dispatch records the actions' requests in their own transaction.
    record(h, Object.assign(x.received(200, answer.duplicate ? 'duplicate' : null), { mappingId: 'gmail-push' }));
    sendJson(x.res, 200, answer.body, x.answerHeaders());
    if (!answer.duplicate) h.deps.signals.gmailPushed?.(routed.push.account);
    return;
  }
  const expected =
    routed.senderAnswer && answer.status >= 200 && answer.status < 300
      ? SENDER_ANSWERS[routed.senderAnswer]
      : undefined;
  if (expected) sendFixedOk(x.res, expected, x.answerHeaders());
  else if (answer.json !== undefined) sendJsonAscii(x.res, answer.status, answer.json, x.reqId);
  else sendJson(x.res, answer.status, answer.body, x.answerHeaders());
  announce(h, x, answer.status, answer.duplicate ? 'duplicate' : null, routed.mappingId, answer.body);
  if (h.deps.logger.isLevelEnabled('debug'))
    x.log.debug(
      { path: x.subPath, client: x.clientIp, status: answer.status, duplicate: answer.duplicate ?? false },
      'hook accepted',
    );
}

const IGNORED = { ok: true, ignored: true } as const;

/**
 * Answer a genuine sender's request that no mapping takes (`unmatched`): 200 `{ ok: true, ignored: true }` (or the
 * answer its sender expects: Slack's forms an empty 200, Twilio's TwiML), nothing queued, recorded and announced with
 * code `unmatched`, one line at info. Never an auth failure: a sender that disables a failing endpoint (Stripe, Svix)
 * must not lose the events that are mapped.
 */
function answerUnmatched(h: Ingress, x: Exchange, routed: Extract<RouteResult, { kind: 'unmatched' }>): void {
  const event = routed.event === undefined ? {} : { eventHeader: routed.event.header, event: routed.event.value };
  const fields = { path: logPath(x.subPath), client: x.clientIp, scheme: routed.scheme, ...event };
  x.log.info(fields, 'hook ignored: signed request matches no mapping');
  record(h, x.received(200, 'unmatched'));
  announce(h, x, 200, 'unmatched', null);
  if (routed.senderAnswer) sendFixedOk(x.res, SENDER_ANSWERS[routed.senderAnswer], x.answerHeaders());
  else sendJson(x.res, 200, IGNORED, x.answerHeaders());
}

/** Answer a request with nothing to commit: a verified sender's handshake, or a skip (204, or its sender's 200). */
function answerUncommitted(h: Ingress, x: Exchange, routed: Extract<RouteResult, { kind: 'reply' | 'skip' }>): void {
  const status = routed.kind === 'reply' ? routed.status : routed.senderAnswer ? 200 : 204;
  record(h, Object.assign(x.received(status, null), { mappingId: routed.mappingId }));
  announce(h, x, status, null, routed.mappingId);
  if (routed.kind === 'reply') sendJson(x.res, status, routed.body, x.answerHeaders());
  else if (routed.senderAnswer) sendFixedOk(x.res, SENDER_ANSWERS[routed.senderAnswer], x.answerHeaders());
  else sendNoContent(x.res, x.answerHeaders());
}
