/**
 * The per-request values the stages of the handler pass along (handler.ts; the chain: docs/architecture.md, "The
 * request lifecycle"), and the one refusal type every stage answers with.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { HttpError } from '../errors.js';
import type { HookRequest, RoutePlan } from '../hooks/routes.js';
import type { Accepted, PresentedToken, SignatureChecks, VerifyRequest } from '../hooks/verifier.js';
import type { ReceivedHook } from '../store/types.js';
import { withoutCredentials } from './auth.js';
import { isFormContentType } from '../form-body.js';
import { LazyPayload } from './body.js';
import { randomHex } from '../ids.js';
import type { IngressContext } from './context.js';
import type { Gate } from './route-limits.js';

const NO_BODY = Buffer.alloc(0);

/**
 * One request on its way through the stages: what the verifier sees (`VerifyRequest`) and what the routes see
 * (`HookRequest`), filled in stage by stage. A class, not an object literal and closures: this is every accepted
 * request's path, and a literal's getter or a closure per request showed in the garbage collector's share.
 */
export class Exchange implements VerifyRequest, HookRequest {
  /**
   * This request's id: the `reqId` of every line it logs, its received record's, its feed event's, and its answer's
   * `x-request-id`. 64 random bits from the id pool (ids.ts): a slice of a buffer, not a CSPRNG call per request.
   */
  readonly reqId = randomHex(8);
  private child: Logger | undefined;
  /** `allowFrom` / `rateLimit` of the route as known before the body (route-limits.ts). */
  gate: Gate = null;
  /** The route's rate-limit token was taken (once the request was authenticated for good). */
  taken = false;
  hookToken: PresentedToken | undefined = undefined;
  verdict: Accepted | undefined = undefined;
  tokenVerified = false;
  signatures?: SignatureChecks;
  rawBody: Buffer = NO_BODY;
  body: LazyPayload | undefined = undefined;
  form = false;
  payload: Record<string, unknown> = {};
  plan!: RoutePlan;
  private stripped: IncomingHttpHeaders | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** One generation for the whole request, even if a reload lands meanwhile. */
    readonly ctx: IngressContext,
    readonly started: number,
    readonly now: number,
    readonly subPath: string,
    readonly clientIp: string,
    readonly query: URLSearchParams,
    private readonly logger: Logger,
    /** Tells the listener that this request's handling is over (answered, or failed): called once. */
    readonly ended: () => void,
  ) {}

  /**
   * The request's logger: every line carries its `reqId`. Made on the first line only: most requests (an accepted
   * wake at the default level) log nothing, and a child logger per request would be garbage on the hot path.
   */
  get log(): Logger {
    return (this.child ??= this.logger.child({ reqId: this.reqId }));
  }

  /** The headers every answer to this request carries (`x-request-id`), plus `extra`. */
  answerHeaders(extra?: Record<string, string>): Record<string, string> {
    return extra === undefined ? { 'x-request-id': this.reqId } : { 'x-request-id': this.reqId, ...extra };
  }

  get rawHeaders(): IncomingHttpHeaders {
    return this.req.headers;
  }

  /** The query string as received, after the `?`; undefined without one. Only a signature that covers the URL reads it. */
  get rawQuery(): string | undefined {
    const url = this.req.url ?? '';
    const q = url.indexOf('?');
    return q < 0 ? undefined : url.slice(q + 1);
  }

  /** Without the credential headers. Only mappings read them (templates, transforms): `/wake` and `/agent` do not pay for the copy. */
  get headers(): IncomingHttpHeaders {
    return (this.stripped ??= withoutCredentials(this.req.headers));
  }

  /** The body as read: parsed later, at most once (a form only where a verifier reads the body: a signature). */
  receiveBody(rawBody: Buffer): void {
    this.rawBody = rawBody;
    // Form bodies (Slack slash commands, Interactivity) only where a signature can authenticate the request; the
    // signature is checked over `rawBody`, never over the parsed form.
    this.form = this.plan.verifier.needsBody && isFormContentType(this.req.headers['content-type']);
    this.body = new LazyPayload(rawBody, this.form);
  }

  peek(): unknown {
    return this.body?.peek() ?? null;
  }

  /** The received record of this request, answered `status`. */
  received(status: number, code: ReceivedHook['code']): ReceivedHook {
    return {
      at: this.now,
      method: 'POST',
      path: this.subPath,
      clientIp: this.clientIp,
      status,
      code,
      eventIds: [],
      runIds: [],
      mappingId: null,
      durationMs: performance.now() - this.started,
      tokenId: this.verdict?.tokenId ?? null,
      reqId: this.reqId,
    };
  }
}

/** How a refusal is told: counted in the refusal windows and announced, announced only, or neither. */
export type Tally = 'counted' | 'announced' | 'none';

/**
 * A refused request: the error answered (status, code, message, and its headers, e.g. `Retry-After`), what becomes
 * of the connection, and how it is told. Authentication failures are accounted (auth-failure limiter) when built.
 */
export class Refusal {
  constructor(
    readonly error: HttpError,
    /** `close`: answered with `Connection: close` (an unread body is not uploaded); `discard`: the rest of the body is read and dropped first. */
    readonly connection: 'keep' | 'close' | 'discard' = 'keep',
    readonly tally: Tally = 'counted',
  ) {}
}
