/**
 * Every route under `{hooks.path}`: the direct `wake` and `agent` routes, the Gmail push receiver, and the mapped
 * ones (`hooks.mappings`, then the presets; see mappings/routes.ts). The ingress asks `plan` for the route's verifier
 * and body limit, authenticates the request through the verifier (before the body, or after it for a signature),
 * parses it, then calls `resolve`; it never looks at a route itself.
 *
 * Which verifier (verifier.ts, rules in docs/architecture.md, "The request lifecycle"): `wake`, `agent`, the base
 * path itself and every mapped path that is not signature-capable, the hook token (`HOOK_TOKEN`); a
 * signature-capable mapped path, its candidates' signatures or the token (`SignatureOrTokenVerifier`), after which
 * `resolve` authenticates the request by the mapping that matches (see mappings/routes.ts); the Gmail push receiver,
 * the push's OIDC token (`GmailPushVerifier`).
 */
import type { Logger } from 'pino';
import type { IncomingHttpHeaders } from 'node:http';
import type { GmailConfig } from '../config/schema/gmail.js';
import type { SignatureConfig } from '../config/schema/hooks.js';
import type { HooksContext } from './context.js';
import type { HookAction } from './dispatch.js';
import type { Config } from '../config/load.js';
import { type Compiled, compileMappings } from './mappings/compile.js';
import { createMappedRoutes } from './mappings/routes.js';
import { compileMappedPlans, type MappedPlans } from './mappings/verifier.js';
import {
  AGENT_FIELDS,
  normalizeAgent,
  normalizeWake,
  unknownFields,
  waitForCompletion,
  WAKE_FIELDS,
} from './normalize.js';
import { buildRun, resolveAgent as agentOf, resolveWakeSessionKey } from './policy.js';
import { decodePushEnvelope, verifyPushToken } from './gmail-push.js';
import type { GmailPush } from '../store/types.js';
import { HOOK_TOKEN, type SignatureChecks, type Verdict, type Verifier, type VerifyRequest } from './verifier.js';

/** How the ingress treats a sub-path before `resolve`; one per route, built once per config generation. */
export interface RoutePlan {
  /** The most body bytes read. */
  readonly bodyLimit: number;
  /** The route's one verifier. */
  readonly verifier: Verifier;
  /** Whether the routes' `allowFrom` / `rateLimit` apply (all but the Gmail push receiver, which is no mapping). */
  readonly limited: boolean;
}

export interface HookRequest {
  ctx: HooksContext;
  subPath: string;
  payload: Record<string, unknown>;
  rawBody: Buffer;
  /** The request's headers without the credential headers (the ingress strips them): what templates and transforms see. */
  headers: IncomingHttpHeaders;
  /** The headers as received, credentials included: for signature verification only (a scheme may sign in any header). */
  rawHeaders: IncomingHttpHeaders;
  query: URLSearchParams;
  /** The query string as received, after the `?` (undefined without one): for signature verification (Twilio signs the URL). */
  rawQuery?: string | undefined;
  now: number;
  /**
   * Whether the shared hook token was presented and valid. Always true where the route's verifier is the token
   * (checked before the body was read); on signature-capable paths, the verdict's. Required: a caller that forgot it
   * must not pass as authenticated.
   */
  tokenVerified: boolean;
  /** The signature checks the route's verifier made (signature-capable paths), reused instead of verifying again. */
  signatures?: SignatureChecks;
  /**
   * The body was `application/x-www-form-urlencoded` (parsed into `payload`). The ingress parses forms only where the
   * verifier reads the body (a signature), and only a mapping with a `signature` accepts one.
   */
  form?: boolean;
  /** The request's logger (its lines carry its `reqId`); the routes' own logger when absent. */
  log?: Logger;
}

/**
 * The 200 a sender expects instead of hookgate's JSON, for a request accepted, skipped or ignored (`SENDER_ANSWERS`):
 * `empty` for Slack's forms (slash commands, Interactivity: Slack would show a JSON body to the user, or read it as a
 * modal's answer), `twiml` for Twilio's (a messaging webhook's answer is TwiML, and an empty `<Response/>` sends no
 * reply).
 */
export type SenderAnswer = 'empty' | 'twiml';

/** What each `SenderAnswer` is: its body and content type. */
export const SENDER_ANSWERS: Readonly<Record<SenderAnswer, { readonly body: string; readonly contentType?: string }>> =
  {
    empty: { body: '' },
    twiml: { body: '<?xml version="1.0" encoding="UTF-8"?><Response/>', contentType: 'text/xml' },
  };

export type RouteResult =
  | { kind: 'none' } // no route here → 404
  /** A transform returned null, or a fan-out had no items → 204 (or the sender's 200, with `senderAnswer`). */
  | { kind: 'skip'; mappingId: string; senderAnswer?: SenderAnswer }
  /**
   * A request a candidate mapping's signature verified (the verdict's `signatures.any`) but no mapping of the path
   * matches: a genuine sender's event type nobody mapped. Answered 200 `{ ok: true, ignored: true }` (an empty 200
   * or TwiML with `senderAnswer`: a Slack or Twilio form), nothing queued, recorded with code `unmatched`. Authenticated: not an auth
   * failure, and it settles the request (the failure count's reset, the route's rate-limit token).
   */
  | {
      kind: 'unmatched';
      scheme: SignatureConfig['scheme'];
      event?: { header: string; value: string };
      senderAnswer?: SenderAnswer;
    }
  /** A sender's handshake (Slack `url_verification`, GitHub `ping`), verified: answered with `body`, nothing queued. */
  | { kind: 'reply'; mappingId: string; status: number; body: Record<string, unknown> }
  | {
      kind: 'actions';
      /** The mapping that produced the actions; null on the direct routes. */
      mappingId: string | null;
      actions: HookAction[];
      fanOut: boolean;
      /** A verified provider delivery id: the idempotency key unless the request carries an explicit one. */
      deliveryId?: string;
      /** Fan-out items beyond `hooks.maxFanOut`, not dispatched (reported in the answer). */
      dropped?: number;
      /** Top-level fields of a direct request that hookgate does not read (see `unknownFields`). */
      unknownFields?: string[];
      /** Answer an accepted request as its sender expects instead of with hookgate's JSON (`SenderAnswer`). */
      senderAnswer?: SenderAnswer;
      /**
       * Hold the answer until the run ends (`waitForCompletion`). Direct `/agent` only, as in OpenClaw: a mapped
       * payload is the sender's own JSON (GitHub, Stripe, Slack…), which must not be able to hold the connection.
       */
      waitForCompletion?: boolean;
      /**
       * What the idempotency fingerprint covers when it is not the raw body: a direct `/agent` request's fields
       * without `waitForCompletion` (in name order), so a retry that only starts (or stops) waiting is the same request.
       */
      identity?: () => string;
    }
  /** A verified Gmail push: committed (GmailStore.recordGmailPush) by the ingress's commit stage, like any action. */
  | { kind: 'gmailPush'; push: Omit<GmailPush, 'receivedAt'> }
  /** `reason` is logged; `signature` says a signature (not the token) failed, which the 401 message names. */
  | { kind: 'unauthorized'; reason: string; signature?: boolean };

export interface HookRoutes {
  plan(ctx: HooksContext, subPath: string): RoutePlan;
  resolve(req: HookRequest): Promise<RouteResult>;
  /**
   * `resolve`, with a direct route's or the Gmail push's result as a value (it throws what `resolve` rejects with):
   * the ingress awaits only a mapping's promise, not one per wake.
   */
  route(req: HookRequest): RouteResult | Promise<RouteResult>;
}

export interface HookRoutesOptions {
  logger: Logger;
}

type DirectRoute = (req: HookRequest) => RouteResult;

const resolveWake: DirectRoute = ({ ctx, payload }) => {
  const wake = normalizeWake(payload);
  if (wake.agentId !== undefined) agentOf(ctx, wake.agentId, true);
  const sessionKey = resolveWakeSessionKey(ctx, wake.sessionKey, 'request');
  const unknown = unknownFields(payload, WAKE_FIELDS);
  const result: RouteResult = {
    kind: 'actions',
    mappingId: null,
    actions: [{ kind: 'wake', text: wake.text, mode: wake.mode, sessionKey }],
    fanOut: false,
  };
  if (unknown) result.unknownFields = unknown; // assigned, not spread: every wake's path
  return result;
};

const resolveAgent: DirectRoute = ({ ctx, subPath, payload, now }) => {
  const agent = normalizeAgent(payload);
  const wait = waitForCompletion(payload);
  const run = buildRun(
    ctx,
    agent,
    {
      hookPath: subPath,
      mappingId: null,
      contentSource: 'webhook',
      sessionKeySource: 'request',
      allowUnsafeExternalContent: false,
    },
    now,
  );
  const unknown = unknownFields(payload, AGENT_FIELDS);
  const result: RouteResult = {
    kind: 'actions',
    mappingId: null,
    actions: [{ kind: 'agent', run }],
    fanOut: false,
    waitForCompletion: wait,
    identity: () => agentIdentity(payload),
  };
  if (unknown) result.unknownFields = unknown;
  return result;
};

/** A direct `/agent` request's fields in name order, without `waitForCompletion`: what its idempotency key covers. */
function agentIdentity(payload: Record<string, unknown>): string {
  const keys = Object.keys(payload)
    .filter((k) => k !== 'waitForCompletion')
    .sort();
  return JSON.stringify(keys.map((k) => [k, payload[k]]));
}

/** Sub-paths that never consult mappings (no mapping work on them); the base path itself has no hook. */
const DIRECT: ReadonlyMap<string, DirectRoute> = new Map([
  ['wake', resolveWake],
  ['agent', resolveAgent],
  ['', () => ({ kind: 'none' })],
]);

/**
 * The routes over a request's generation: what they compile lives in the generation (`ctx.routes`), so this holds
 * only the logger; a request planned and resolved through it uses its own generation's routes throughout.
 */
export function createHookRoutes(opts: HookRoutesOptions): HookRoutes {
  const mapped = createMappedRoutes(opts);
  const route = (req: HookRequest): RouteResult | Promise<RouteResult> => {
    const gmail = req.ctx.config.hooks.gmail;
    if (gmail.account && req.subPath === gmail.pushPath) return resolveGmailPush(req, gmail.account);
    const direct = DIRECT.get(req.subPath);
    return direct ? direct(req) : mapped.resolve(req);
  };
  return {
    plan(ctx, subPath) {
      return ctx.routes.plan(subPath);
    },
    async resolve(req) {
      return route(req);
    },
    route,
  };
}

/**
 * One config generation's routes, compiled when the generation is built (never per request): the plans of the direct
 * routes, of the Gmail push receiver and of the mapped paths, and the compiled mappings with their transform loader.
 */
export class CompiledRoutes {
  readonly mapped: Compiled;
  private readonly direct: RoutePlan;
  private readonly push: RoutePlan | undefined;
  private readonly pushPath: string;
  private readonly mappedPlans: MappedPlans;

  constructor(config: Config) {
    const hooks = config.hooks;
    this.mapped = compileMappings(config);
    this.mappedPlans = compileMappedPlans(this.mapped, hooks.maxBodyBytes);
    this.direct = { bodyLimit: hooks.maxBodyBytes, verifier: HOOK_TOKEN, limited: true };
    this.push = hooks.gmail.account
      ? { bodyLimit: hooks.maxBodyBytes, verifier: new GmailPushVerifier(hooks.gmail), limited: false }
      : undefined;
    this.pushPath = hooks.gmail.pushPath;
  }

  /** The plan of `subPath`: the same object for every request of the generation. */
  plan(subPath: string): RoutePlan {
    if (this.push !== undefined && subPath === this.pushPath) return this.push;
    if (DIRECT.has(subPath)) return this.direct;
    return this.mappedPlans.byPath.get(subPath) ?? this.mappedPlans.other;
  }

  /** Release the transform loader (with the generation). Transforms already loaded keep working for requests in flight. */
  dispose(): Promise<void> {
    return this.mapped.loader?.dispose() ?? Promise.resolve();
  }
}

const PUSH_VERIFIED: Verdict = { ok: true, tokenId: null, settled: true };

/**
 * The Gmail push receiver's verifier: the push's OIDC token (gmail-push.ts), in the `Authorization` header, checked
 * before the body is read. The hook token does not authenticate a push.
 */
class GmailPushVerifier implements Verifier {
  readonly scheme = 'oidc';
  readonly needsBody = false;

  constructor(private readonly gmail: Pick<GmailConfig, 'audience' | 'serviceAccountEmail' | 'jwksUrl'>) {}

  async verify(req: VerifyRequest): Promise<Verdict> {
    const check = await verifyPushToken(req.rawHeaders, this.gmail, req.now);
    return check.ok ? PUSH_VERIFIED : { ok: false, scheme: 'oidc', reason: check.reason };
  }
}

/**
 * A verified push: Gmail's notification for the configured mailbox, to commit. A notification of another mailbox
 * (a topic shared with other watchers) is acknowledged with 204 and dropped: redelivering it could never help.
 */
function resolveGmailPush(req: HookRequest, account: string): RouteResult {
  const push = decodePushEnvelope(req.payload);
  if (push.account.toLowerCase() !== account.toLowerCase()) return { kind: 'skip', mappingId: 'gmail-push' };
  return { kind: 'gmailPush', push: { ...push, account } };
}
