/**
 * Every route under `{hooks.path}`: the direct `wake` and `agent` routes, and the mapped ones (`hooks.mappings`, then
 * the presets; see mappings/routes.ts). The ingress asks `plan` how to authenticate and how much body to read, reads
 * it, then calls `resolve`; it never looks at a route itself.
 *
 * Authentication rule (CONTRACT §4.3, §6): `wake`, `agent`, the base path itself and every mapped path that is not
 * signature-capable are authenticated by the shared token before the body is read. On a signature-capable mapped
 * path the body is read first, the candidates' signatures are verified over its raw bytes (`verify`) before it is
 * parsed, and `resolve` authenticates the request by the mapping that matches (see mappings/routes.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { SignatureConfig } from '../config/schema/hooks.js';
import type { HooksContext } from './context.js';
import type { HookAction } from './dispatch.js';
import { createMappedRoutes } from './mappings/routes.js';
import type { SignatureResult } from './mappings/signatures.js';
import { AGENT_FIELDS, normalizeAgent, normalizeWake, unknownFields, waitForCompletion, WAKE_FIELDS } from './normalize.js';
import { buildRun, resolveWakeSessionKey } from './policy.js';
import { decodePushEnvelope, type OidcCheck, verifyPushToken } from './gmail-push.js';
import type { GmailPush } from '../store/types.js';

/** How the ingress treats a sub-path before `resolve`. */
export type RoutePlan =
  /** The shared token authenticates the request before its body (at most `bodyLimit` bytes) is read. */
  | { auth: 'token'; bodyLimit: number }
  /**
   * The body is read first (the token check is deferred and passed to `resolve` as `tokenVerified`): the mapping
   * that matches decides between its signature and the token.
   */
  | {
      auth: 'signature';
      bodyLimit: number;
      /**
       * Verifies the candidate mappings' signatures over the raw bytes, before any parse, in order until one
       * verifies. Without a valid token, a body no signature verifies is answered 401 unparsed. `payload` is only
       * read by a verifier whose signature verified (Stripe and Slack take the delivery id from the signed body).
       */
      verify(rawBody: Buffer, rawHeaders: IncomingHttpHeaders, now: number, payload: { peek(): unknown }): SignatureChecks;
    }
  /**
   * The Gmail push receiver (`hooks.gmail.pushPath`, see gmail-push.ts): the push's OIDC token, checked by `verify`
   * before the body is read, authenticates it; the hook token does not.
   */
  | { auth: 'oidc'; bodyLimit: number; verify(rawHeaders: IncomingHttpHeaders, now: number): Promise<OidcCheck> };

/** What `verify` found, passed to `resolve` so no signature is verified twice. */
export interface SignatureChecks {
  /** Some candidate's signature verified the body. */
  readonly any: boolean;
  /** Why none did (for the log line), when none did. */
  readonly reason: string;
  readonly results: ReadonlyMap<SignatureConfig, SignatureResult>;
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
  now: number;
  /**
   * Whether the shared hook token was presented and valid. Always true on `token` plans (checked before the body
   * was read); on `signature` plans it is the result of the deferred token check. Required: a caller that forgot
   * it must not pass as authenticated.
   */
  tokenVerified: boolean;
  /** The signature checks `plan.verify` made (signature plans), reused instead of verifying again. */
  signatures?: SignatureChecks;
  /**
   * The body was `application/x-www-form-urlencoded` (parsed into `payload`). The ingress parses forms on `signature`
   * plans only, and only a mapping with a `signature` accepts one.
   */
  form?: boolean;
}

export type RouteResult =
  | { kind: 'none' } // no route here → 404
  /** A transform returned null, or a fan-out had no items → 204 (or an empty 200, with `emptyAnswer`). */
  | { kind: 'skip'; mappingId: string; emptyAnswer?: boolean }
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
      /**
       * Answer an accepted request with an empty 200 instead of hookgate's JSON (Slack slash commands and
       * Interactivity: Slack would show a JSON body to the user or read it as a modal response).
       */
      emptyAnswer?: boolean;
      /**
       * Hold the answer until the run ends (`waitForCompletion`). Direct `/agent` only, as in OpenClaw: a mapped
       * payload is the sender's own JSON (GitHub, Stripe, Slack…), which must not be able to hold the connection.
       */
      waitForCompletion?: boolean;
    }
  /** A verified Gmail push: the ingress commits it (GmailStore.recordGmailPush) and answers once it is committed. */
  | { kind: 'gmailPush'; push: Omit<GmailPush, 'receivedAt'> }
  /** `reason` is logged; `signature` says a signature (not the token) failed, which the 401 message names. */
  | { kind: 'unauthorized'; reason: string; signature?: boolean };

export interface HookRoutes {
  /** Compile a config generation's routes now (start, reload), so no request pays for it. */
  prepare(ctx: HooksContext): void;
  plan(ctx: HooksContext, subPath: string): RoutePlan;
  resolve(req: HookRequest): Promise<RouteResult>;
}

export interface HookRoutesOptions {
  logger: Logger;
}

type DirectRoute = (req: HookRequest) => RouteResult;

const resolveWake: DirectRoute = ({ ctx, payload }) => {
  const wake = normalizeWake(payload);
  const sessionKey = resolveWakeSessionKey(ctx, wake.sessionKey, 'request');
  const unknown = unknownFields(payload, WAKE_FIELDS);
  return {
    kind: 'actions',
    mappingId: null,
    actions: [{ kind: 'wake', text: wake.text, mode: wake.mode, sessionKey }],
    fanOut: false,
    ...(unknown ? { unknownFields: unknown } : {}),
  };
};

const resolveAgent: DirectRoute = ({ ctx, subPath, payload, now }) => {
  const agent = normalizeAgent(payload);
  const wait = waitForCompletion(payload);
  const run = buildRun(
    ctx,
    agent,
    { hookPath: subPath, mappingId: null, contentSource: 'webhook', sessionKeySource: 'request', allowUnsafeExternalContent: false },
    now,
  );
  const unknown = unknownFields(payload, AGENT_FIELDS);
  return {
    kind: 'actions',
    mappingId: null,
    actions: [{ kind: 'agent', run }],
    fanOut: false,
    waitForCompletion: wait,
    ...(unknown ? { unknownFields: unknown } : {}),
  };
};

/** Sub-paths that never consult mappings (no mapping work on them); the base path itself has no hook. */
const DIRECT: ReadonlyMap<string, DirectRoute> = new Map([
  ['wake', resolveWake],
  ['agent', resolveAgent],
  ['', () => ({ kind: 'none' })],
]);

/** One instance per process: the mapped routes compile each config generation once. */
export function createHookRoutes(opts: HookRoutesOptions): HookRoutes {
  const mapped = createMappedRoutes(opts);
  return {
    prepare(ctx) {
      mapped.prepare(ctx);
    },
    plan(ctx, subPath) {
      const gmail = ctx.config.hooks.gmail;
      if (gmail.account && subPath === gmail.pushPath) {
        return { auth: 'oidc', bodyLimit: ctx.config.hooks.maxBodyBytes, verify: (headers, now) => verifyPushToken(headers, gmail, now) };
      }
      return DIRECT.has(subPath) ? { auth: 'token', bodyLimit: ctx.config.hooks.maxBodyBytes } : mapped.plan(ctx, subPath);
    },
    async resolve(req) {
      const gmail = req.ctx.config.hooks.gmail;
      if (gmail.account && req.subPath === gmail.pushPath) return resolveGmailPush(req, gmail.account);
      const direct = DIRECT.get(req.subPath);
      return direct ? direct(req) : mapped.resolve(req);
    },
  };
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
