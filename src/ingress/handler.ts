import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { normalizeMatchPath } from '../config/schema/hooks.js';
import { HttpError } from '../errors.js';
import type { HooksContext } from '../hooks/context.js';
import { dispatch, type HookAction, type RuntimeSignals } from '../hooks/dispatch.js';
import { extractIdempotencyKey, idempotencyClaim } from '../hooks/idempotency.js';
import { normalizeAgent, normalizeWake } from '../hooks/normalize.js';
import { buildRun } from '../hooks/policy.js';
import type { ReceivedHook, Store } from '../store/types.js';
import { extractToken, HookToken, tokenMatches } from './auth.js';
import { parseJsonObject, readBody } from './body.js';
import { ClientIpResolver } from './client-ip.js';
import { AuthFailureLimiter } from './limiter.js';
import { sendError, sendErrorDiscardingBody, sendJson, sendNoContent } from './respond.js';

/** What a mapped path (`{hooks.path}/<name>`) turns into; mappings plug in here (src/hooks/mappings.ts). */
export interface MappedRoutes {
  /** Compile a config generation's mappings now (start, reload), so no request pays for it. */
  prepare?(ctx: HooksContext): void;
  /**
   * Called before auth, for sub-paths other than `wake` and `agent`: true when a mapping that could handle this path
   * verifies its sender's signature. The body is then read before authentication, and `resolve` authenticates the
   * request (the signature of the mapping that matches, else the shared token, whose check is passed in).
   */
  verifiesOwnSignature(ctx: HooksContext, subPath: string): boolean;
  /** The body limit of a mapped sub-path (default `hooks.maxBodyBytes`; larger on the gmail preset's path). */
  bodyLimit?(ctx: HooksContext, subPath: string): number;
  /**
   * On a signature path whose body is not a JSON object and whose token was not valid: whether any candidate
   * mapping's signature verifies the raw body (then the JSON error is answered; else 401).
   */
  authenticatesRawBody?(input: { ctx: HooksContext; subPath: string; rawBody: Buffer; headers: IncomingMessage['headers']; now: number }): boolean;
  resolve(input: MappedRequest): Promise<MappedResult>;
}

export interface MappedRequest {
  ctx: HooksContext;
  subPath: string;
  payload: Record<string, unknown>;
  rawBody: Buffer;
  headers: IncomingMessage['headers'];
  query: URLSearchParams;
  now: number;
  /**
   * Whether the shared hook token was presented and valid. Always true on paths authenticated by the token before
   * the body was read; on signature paths it is the result of the (deferred) token check. Omitted → true.
   */
  tokenVerified?: boolean;
}

export type MappedResult =
  | { kind: 'none' } // no mapping matched → 404
  | { kind: 'skip'; mappingId: string } // a transform returned null, or a fan-out had no items → 204
  | {
      kind: 'actions';
      mappingId: string;
      actions: HookAction[];
      fanOut: boolean;
      /** A verified provider delivery id: the idempotency key unless the request carries an explicit one. */
      deliveryId?: string;
      /** Fan-out items beyond `hooks.maxFanOut`, not dispatched (reported in the answer). */
      dropped?: number;
    }
  /** `reason` is logged; `signature` says a signature (not the token) failed, which the 401 message names. */
  | { kind: 'unauthorized'; reason: string; signature?: boolean };

export interface HandlerDeps {
  store: Store;
  signals: RuntimeSignals;
  logger: Logger;
  mapped?: MappedRoutes;
}

/** Per config generation: rebuilt on reload; the limiter's memory is kept across reloads. */
export class IngressState {
  ctx!: HooksContext;
  ipResolver!: ClientIpResolver;
  /** hooks.token of the same generation as `ctx` (both are read in the synchronous start of a request). */
  token: HookToken | undefined;
  readonly limiter: AuthFailureLimiter;

  constructor(ctx: HooksContext) {
    this.limiter = new AuthFailureLimiter(ctx.config.hooks.authFailureLimit);
    this.update(ctx);
  }

  update(ctx: HooksContext): void {
    this.ctx = ctx;
    this.ipResolver = new ClientIpResolver(ctx.config.gateway.trustedProxies);
    this.token = ctx.config.hooks.token ? new HookToken(ctx.config.hooks.token) : undefined;
    this.limiter.setLimits(ctx.config.hooks.authFailureLimit);
  }
}

const NOT_FOUND = new HttpError(404, 'not_found', 'no hook at this path');
const EMPTY_QUERY: URLSearchParams = new URLSearchParams();

/**
 * The request handler, in the contract's order: query token → method → credentials → body → route →
 * validation and policy → durable commit → answer.
 */
export function createHandler(state: IngressState, deps: HandlerDeps) {
  const { store, signals, logger } = deps;

  const record = (rec: ReceivedHook) => {
    store.recordReceived(rec).catch((err) => logger.warn({ err: (err as Error).message }, 'could not record a received hook'));
  };

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const ctx = state.ctx; // one generation for the whole request, even if a reload lands meanwhile
    const url = req.url ?? '/';
    const qIndex = url.indexOf('?');
    const pathname = qIndex < 0 ? url : url.slice(0, qIndex);
    const base = ctx.basePath;

    if (!ctx.config.hooks.enabled || !(pathname === base || pathname.startsWith(`${base}/`))) {
      return sendError(res, NOT_FOUND);
    }
    const query = qIndex < 0 ? EMPTY_QUERY : new URLSearchParams(url.slice(qIndex + 1));
    if (qIndex >= 0 && query.has('token')) {
      return sendError(
        res,
        new HttpError(400, 'query_token', 'the hook token must be sent in the Authorization: Bearer header (or x-hookgate-token), never in the query string'),
      );
    }
    if (req.method !== 'POST') {
      return sendError(res, new HttpError(405, 'method_not_allowed', 'only POST is accepted here'), { allow: 'POST' });
    }

    const subPath = normalizeMatchPath(pathname.slice(base.length));
    const now = Date.now();
    const clientIp = state.ipResolver.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for']);
    const received = (status: number, code: string | null): ReceivedHook => ({
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
    });

    // `/wake` and `/agent` never consult mappings: no mapping work on the direct routes.
    const routes = subPath !== 'wake' && subPath !== 'agent' && subPath !== '' ? deps.mapped : undefined;
    const signed = routes?.verifiesOwnSignature(ctx, subPath) ?? false;
    let tokenVerified = true;
    if (!signed) {
      if (!tokenMatches(extractToken(req.headers), state.token)) {
        return rejectAuth(res, state, clientIp, now, logger, record, received);
      }
      state.limiter.reset(clientIp);
    } else {
      // Deferred: the mapping that matches decides whether its signature or the token authenticates the request.
      tokenVerified = tokenMatches(extractToken(req.headers), state.token);
    }

    try {
      const limit = routes?.bodyLimit?.(ctx, subPath) ?? ctx.config.hooks.maxBodyBytes;
      const rawBody = await readBody(req, limit, ctx.config.hooks.bodyTimeoutMs);
      let payload: Record<string, unknown>;
      try {
        payload = parseJsonObject(rawBody);
      } catch (err) {
        // Not yet authenticated: an anonymous sender learns nothing about the body rules, and the failure counts.
        if (signed && !tokenVerified && !(routes?.authenticatesRawBody?.({ ctx, subPath, rawBody, headers: req.headers, now }) ?? false)) {
          return rejectAuth(res, state, clientIp, now, logger, record, received, `hook ${logPath(subPath)} rejected: no signature verifies the body`, true);
        }
        throw err;
      }

      let actions: HookAction[];
      let fanOut = false;
      let mappingId: string | null = null;
      let deliveryId: string | undefined;
      let dropped: number | undefined;
      if (subPath === 'wake') {
        const wake = normalizeWake(payload);
        actions = [{ kind: 'wake', text: wake.text, mode: wake.mode }];
      } else if (subPath === 'agent') {
        const agent = normalizeAgent(payload);
        const run = buildRun(
          ctx,
          agent,
          { hookPath: subPath, mappingId: null, contentSource: 'webhook', sessionKeySource: 'request', allowUnsafeExternalContent: false },
          now,
        );
        actions = [{ kind: 'agent', run }];
      } else {
        const mapped = routes ? await routes.resolve({ ctx, subPath, payload, rawBody, headers: req.headers, query, now, tokenVerified }) : { kind: 'none' as const };
        if (mapped.kind === 'none') throw NOT_FOUND;
        if (mapped.kind === 'unauthorized') {
          return rejectAuth(res, state, clientIp, now, logger, record, received, `hook ${logPath(subPath)} rejected: ${mapped.reason}`, mapped.signature);
        }
        if (signed) state.limiter.reset(clientIp);
        if (mapped.kind === 'skip') {
          record({ ...received(204, null), mappingId: mapped.mappingId });
          return sendNoContent(res);
        }
        ({ actions, fanOut, mappingId, deliveryId, dropped } = mapped); // never empty: an empty fan-out is a `skip`
      }

      const key = extractIdempotencyKey(req.headers, payload, deliveryId);
      const idempotency = key === undefined ? undefined : idempotencyClaim(subPath, key, rawBody, ctx.config.hooks.idempotencyTtlSeconds, now);
      const answer = await dispatch(ctx, store, signals, {
        actions,
        idempotency,
        received: { ...received(0, null), mappingId },
        fanOut,
        ...(dropped ? { dropped } : {}),
      });
      sendJson(res, answer.status, answer.body);
      if (logger.isLevelEnabled('debug')) logger.debug({ path: subPath, client: clientIp, status: answer.status, duplicate: answer.duplicate ?? false }, 'hook accepted');
    } catch (err) {
      if (err instanceof HttpError) {
        if (err.status !== 404 || subPath) record(received(err.status, err.code));
        if (err.status === 503) logger.error({ path: subPath }, 'store unavailable: hook refused with 503');
        if (err.status === 413) return sendErrorDiscardingBody(req, res, err);
        const closing = err.status === 408 || err.code === 'body_aborted';
        return sendError(res, err, closing ? { connection: 'close' } : undefined);
      }
      logger.error({ err, path: subPath }, 'hook handler failed');
      record(received(500, 'internal'));
      return sendError(res, new HttpError(500, 'internal', 'internal error; nothing was accepted'));
    }
  };
}

function rejectAuth(
  res: ServerResponse,
  state: IngressState,
  clientIp: string,
  now: number,
  logger: Logger,
  record: (r: ReceivedHook) => void,
  received: (status: number, code: string | null) => ReceivedHook,
  /** Why (signature paths): logged at warn for a 401, not for a 429 (a locked-out client must not flood the log). */
  reason?: string,
  signature = false,
): void {
  const retryAfter = state.limiter.retryAfter(clientIp, now);
  if (retryAfter > 0) {
    // Not recorded in the store: a locked-out client must not be able to make us write.
    return sendError(res, new HttpError(429, 'rate_limited', `too many failed authentications; retry after ${retryAfter} s`), {
      'retry-after': String(retryAfter),
    });
  }
  if (reason !== undefined) logger.warn({ client: clientIp }, reason);
  const lockedFor = state.limiter.fail(clientIp, now);
  if (lockedFor > 0) logger.warn({ client: clientIp, retryAfterSeconds: lockedFor }, 'hook auth throttled: client locked out');
  record(received(401, 'unauthorized'));
  sendError(res, new HttpError(401, 'unauthorized', signature ? 'missing or invalid signature' : 'missing or invalid hook token'));
}

/** A sub-path for a log line: printable, bounded (it comes from the request line). */
function logPath(subPath: string): string {
  const flat = subPath.replace(/[^\x21-\x7e]/g, '?');
  return flat.length > 100 ? `${flat.slice(0, 99)}…` : flat;
}
