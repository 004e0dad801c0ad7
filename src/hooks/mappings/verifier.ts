/**
 * The mapped paths' plans, built once per compiled generation: a signature-capable path (a candidate mapping has a
 * `signature`) gets one `SignatureOrTokenVerifier` over its candidates; every other mapped path gets the hook token.
 */
import type { SignatureConfig } from '../../config/schema/hooks.js';
import type { HookRequest, RoutePlan } from '../routes.js';
import { HOOK_TOKEN, validHookToken, type Verdict, type Verifier, type VerifyRequest } from '../verifier.js';
import { candidates, type Compiled, type CompiledMapping, isSignaturePath } from './compile.js';
import { type SignatureHeaders, type SignatureResult, type SignedRequest, verifySignature } from './signatures.js';

/**
 * A candidate mapping's signature, or the hook token: the verifier of a signature-capable path. With a valid token
 * the request passes unverified here (the mapping that matches decides in `resolve`: its signature when it has one,
 * the token being then no alternative). Without one, the candidates' signatures are verified over the raw bytes, in
 * order until one verifies; a body that none verifies is refused unparsed. Either way the verdict is not `settled`:
 * the mapping that matches the parsed body has the last word.
 */
export class SignatureOrTokenVerifier implements Verifier {
  readonly scheme = 'signature';
  readonly needsBody = true;

  constructor(private readonly candidates: readonly CompiledMapping[]) {}

  verify(req: VerifyRequest): Verdict {
    const tokenId = validHookToken(req);
    if (tokenId !== undefined) return { ok: true, tokenId, settled: false };
    const signed = new LazySignedRequest(req.rawBody, req.rawHeaders, req.rawQuery, req);
    const results = new Map<SignatureConfig, SignatureResult>();
    let reason: string | undefined;
    for (const m of this.candidates) {
      if (m.signature === undefined || results.has(m.signature)) continue;
      const v = verifySignature(m.signature, signed, req.now);
      results.set(m.signature, v);
      if (v.ok) return { ok: true, tokenId: null, settled: false, signatures: { any: true, reason: '', results } };
      reason ??= `${m.signature.scheme} signature ${v.reason}`;
    }
    const signatures = { any: false, reason: reason ?? 'missing or invalid hook token', results };
    return { ok: false, scheme: 'signature', reason: signatures.reason, signatures };
  }
}

/**
 * What the mapping that matched the parsed body accepts: its signature when it has one, else the hook token. With no
 * match, `by` says which credential of the path authenticated the request: the token (then 404), or a candidate's
 * signature (`verified`, the one that verified: a genuine sender's event that no mapping takes).
 */
export type MappingAuth =
  | { ok: true; by: 'token' | 'signature'; deliveryId: string | undefined; verified?: SignatureConfig }
  | { ok: false; reason: string; signature: boolean };

const NO_TOKEN: MappingAuth = { ok: false, reason: 'missing or invalid hook token', signature: false };

/**
 * The last word of a signature-capable path's verifier, once the parsed body matched mapping `m` (or none): the
 * verdict said some credential of the path is valid; this says whether it is the one `m` accepts. A request with no
 * match is authenticated by the hook token (then 404), or by the signature of a candidate of the path that verified
 * it (the verdict's `signatures.any`: the sender is genuine, its event unmapped, and it is not an auth failure); a
 * signature alone still opens none of the path's mappings but its own.
 */
export function authorizeMapping(m: CompiledMapping | undefined, input: HookRequest): MappingAuth {
  const tokenVerified = input.tokenVerified === true;
  if (!m) {
    if (tokenVerified) return { ok: true, by: 'token', deliveryId: undefined };
    const verified = verifiedSignature(input);
    if (verified) return { ok: true, by: 'signature', deliveryId: undefined, verified };
    const checked = input.signatures;
    return checked ? { ok: false, reason: checked.reason, signature: true } : NO_TOKEN;
  }
  if (!m.signature) {
    return tokenVerified ? { ok: true, by: 'token', deliveryId: undefined } : NO_TOKEN;
  }
  const v = checkSignature(m.signature, input);
  if (!v.ok) return { ok: false, reason: `${m.signature.scheme} signature ${v.reason}`, signature: true };
  return { ok: true, by: 'signature', deliveryId: v.deliveryId };
}

/** The first candidate signature the path's verifier found valid (`signatures.any`), else undefined. */
function verifiedSignature(input: HookRequest): SignatureConfig | undefined {
  if (input.signatures?.any !== true) return undefined;
  for (const [cfg, result] of input.signatures.results) if (result.ok) return cfg;
  return undefined;
}

/** `cfg` verified against the request: the verifier's check before the parse when it made one, else now. */
export function checkSignature(cfg: SignatureConfig, input: HookRequest): SignatureResult {
  return (
    input.signatures?.results.get(cfg) ??
    verifySignature(
      cfg,
      { rawBody: input.rawBody, headers: input.rawHeaders, payload: input.payload, rawQuery: input.rawQuery },
      input.now,
    )
  );
}

/** The plans of a generation's mapped paths: one per path a mapping or preset names, one for any other path. */
export interface MappedPlans {
  readonly byPath: ReadonlyMap<string, RoutePlan>;
  /** Any other mapped path's. */
  readonly other: RoutePlan;
}

export function compileMappedPlans(c: Compiled, maxBodyBytes: number): MappedPlans {
  const planOf = (subPath: string | undefined): RoutePlan => {
    const signed = subPath === undefined ? c.wildcardSigned : isSignaturePath(c, subPath);
    return {
      bodyLimit: (subPath === undefined ? undefined : c.bodyLimits.get(subPath)) ?? maxBodyBytes,
      verifier: signed
        ? new SignatureOrTokenVerifier(subPath === undefined ? c.wildcard : candidates(c, subPath))
        : HOOK_TOKEN,
      limited: true,
    };
  };
  const byPath = new Map<string, RoutePlan>();
  for (const p of [...c.byPath.keys(), ...c.bodyLimits.keys()]) if (!byPath.has(p)) byPath.set(p, planOf(p));
  return { byPath, other: planOf(undefined) };
}

/**
 * What a signature scheme sees: the raw body, headers and query string, and the parsed body only if it asks
 * (Stripe's and Slack's delivery ids, Linear's timestamp). A class rather than an object literal with a getter, which
 * is a new closure and accessor pair per request: garbage for the collector on every request.
 */
class LazySignedRequest implements SignedRequest {
  constructor(
    readonly rawBody: Buffer,
    readonly headers: SignatureHeaders,
    readonly rawQuery: string | undefined,
    private readonly body: { peek(): unknown },
  ) {}

  get payload(): unknown {
    return this.body.peek();
  }
}
