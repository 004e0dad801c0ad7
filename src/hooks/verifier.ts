/**
 * How a route authenticates its requests: one `Verifier` per route, chosen when a config generation is compiled
 * (`HookRoutes.plan`), after convoy's `VerifyRequest`. The implementations: the shared hook token (`HOOK_TOKEN`,
 * here), the mappings' signatures, alone or with the token as the alternative (mappings/verifier.ts), and the Gmail
 * push's OIDC token (routes.ts). The ingress calls `verify` once, in its authenticate stage: before the body is read
 * when the verifier does not need it, after it (and before any parse) when it does. The chain of stages and what
 * each answers: docs/architecture.md, "The request lifecycle".
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { SignatureConfig } from '../config/schema/hooks.js';
import type { SignatureResult } from './mappings/signatures.js';

/** What a 401 names: the credential the route's verifier checks. */
export type Scheme = 'token' | 'signature' | 'oidc';

/** One configured hook token, as the ingress matched the presented one (expired or not): its id and expiry. */
export interface PresentedToken {
  readonly id: string;
  /** Epoch ms; a token at or past it is refused like a wrong one. */
  readonly notAfter: number | undefined;
}

/** What a verifier sees of a request. */
export interface VerifyRequest {
  /** The headers as received, credentials included (a scheme may sign in any header). */
  readonly rawHeaders: IncomingHttpHeaders;
  readonly now: number;
  /** The listed hook token the request presented (`hooks.token`, `hooks.tokens`), expired or not; undefined if none. */
  readonly hookToken: PresentedToken | undefined;
  /** The body exactly as received: read only by a verifier that `needsBody`. */
  readonly rawBody: Buffer;
  /** The request target's query string as received, after the `?`; undefined without one (a signature may cover it). */
  readonly rawQuery?: string | undefined;
  /** The parsed body (parsed at most once, only when asked), or null when it is not an object. */
  peek(): unknown;
}

/** What `verify` found for the candidate signatures, passed on to `resolve` so no signature is verified twice. */
export interface SignatureChecks {
  /** Some candidate's signature verified the body. */
  readonly any: boolean;
  /** Why none did (for the log line), when none did. */
  readonly reason: string;
  readonly results: ReadonlyMap<SignatureConfig, SignatureResult>;
}

export interface Accepted {
  readonly ok: true;
  /** The id of the valid hook token the request presented (the received record's `tokenId`), else null. */
  readonly tokenId: string | null;
  /**
   * The request is authenticated for good (the token, OIDC). False where the mapping that matches the parsed body
   * decides between its signature and the token (`resolve`): the route's rate-limit token and the auth-failure
   * count's reset wait for it.
   */
  readonly settled: boolean;
  readonly signatures?: SignatureChecks;
}

export interface Refused {
  readonly ok: false;
  readonly scheme: Scheme;
  /** Why, for the log line (never a secret); undefined for a missing or wrong token (not logged: a flood would be). */
  readonly reason: string | undefined;
  readonly signatures?: SignatureChecks;
}

export type Verdict = Accepted | Refused;

export interface Verifier {
  readonly scheme: Scheme;
  /** Reads the body: called once it is read (before any parse), not before. */
  readonly needsBody: boolean;
  /**
   * The verdict, or a promise of it where the check must wait (OIDC's key fetch). The token and the signatures answer
   * at once: the ingress then does not await, which is one promise and microtask fewer on every wake.
   */
  verify(req: VerifyRequest): Verdict | Promise<Verdict>;
}

/** The id of the request's hook token when it is valid (listed and not expired), else undefined. */
export function validHookToken(req: Pick<VerifyRequest, 'hookToken' | 'now'>): string | undefined {
  const t = req.hookToken;
  return t === undefined || (t.notAfter !== undefined && req.now >= t.notAfter) ? undefined : t.id;
}

const NO_TOKEN: Verdict = { ok: false, scheme: 'token', reason: undefined };

/**
 * The shared hook token, checked before the body is read. Its verdicts are built once per token id: this is the
 * wake path, where a per-request object or closure shows in the garbage collector's share.
 */
class HookTokenVerifier implements Verifier {
  readonly scheme = 'token';
  readonly needsBody = false;
  private readonly accepted = new Map<string, Verdict>();

  verify(req: VerifyRequest): Verdict {
    const t = req.hookToken;
    if (t === undefined) return NO_TOKEN;
    if (validHookToken(req) === undefined) return { ok: false, scheme: 'token', reason: `expired token ${t.id}` };
    let verdict = this.accepted.get(t.id);
    if (verdict === undefined) {
      verdict = { ok: true, tokenId: t.id, settled: true };
      this.accepted.set(t.id, verdict);
    }
    return verdict;
  }
}

export const HOOK_TOKEN: Verifier = new HookTokenVerifier();
