/**
 * What the ingress reads from one config generation: the request path's view (`HooksContext`) and what the ingress
 * builds from the same config. Built once per generation (src/generation.ts), never per request; a request reads it
 * once, at its start, and uses it to its end, even across a reload.
 */
import type { HooksContext } from '../hooks/context.js';
import { ClientIpResolver } from '../net/client-ip.js';
import { tokenSetOf, type TokenSet } from './auth.js';
import { RouteLimits } from './route-limits.js';

export interface IngressContext extends HooksContext {
  /** `hooks.token` and `hooks.tokens`, ready for constant-time compares (the admin listener refuses them: the same set). */
  readonly hookTokens: TokenSet;
  /** The client's address behind `gateway.trustedProxies`. */
  readonly clientIps: ClientIpResolver;
  /** `allowFrom` / `rateLimit` of the routes (route-limits.ts); null when no route has one. */
  readonly routeLimits: RouteLimits | null;
}

/**
 * The ingress's view of the generation `hooks` belongs to. `previous`: the route limits of the generation before,
 * whose buckets are kept for routes whose key and limit did not change (a bucket outlives a reload).
 */
export function buildIngressContext(hooks: HooksContext, previous: RouteLimits | null): IngressContext {
  const { config } = hooks;
  return {
    ...hooks,
    hookTokens: tokenSetOf(config.hooks),
    clientIps: new ClientIpResolver(config.gateway.trustedProxies),
    routeLimits: RouteLimits.compile(config.hooks, previous, Date.now()),
  };
}
