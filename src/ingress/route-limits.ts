/**
 * Per-route limits (docs/security.md, "Per-route limits"): `allowFrom` (client addresses, after trusted proxies) and
 * `rateLimit` (a token bucket per route, not per client) on each mapping and sender preset, and on `/wake` and
 * `/agent` (`hooks.routes`). Compiled once per config generation; null when no route has a limit, so an unlimited service
 * pays one null check per request.
 *
 * Which route's limits apply is decided before the body is read, from what is known then: the sub-path and the
 * headers. Mappings are tried in the order the router tries them (`match.path`, then `match.headers`); the first
 * that matches decides, unless it is told apart by `match.source` (a payload field): then the mapping is only known
 * once the body is parsed, and `gate` answers UNDECIDED (refusing by address before the body only when no mapping
 * that could still match would allow the client); the handler applies the matched mapping's limits after routing.
 *
 * Order (the stages of handler.ts; the whole chain: docs/architecture.md, "The request lifecycle"): `allowFrom`
 * before authentication (cheapest, and a stranger outside the list learns nothing about the token); a token is
 * taken from the bucket only once the request is authenticated, so a sender without the token cannot spend a
 * route's budget. A signature is verified over the body, so a signed route only looks at its bucket before the body
 * (`peek`: an exhausted route is refused unread) and takes the token once the signature verified.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { AddressList } from '../cidr.js';
import type { HooksConfig } from '../config/schema/hooks.js';
import type { RouteLimitsConfig } from '../config/schema/limits.js';
import { HttpError } from '../errors.js';
import { allMappings } from '../hooks/mappings/presets/index.js';
import { CREDENTIAL_HEADERS } from './auth.js';
import { TokenBucket } from './token-bucket.js';

/** The limits of one route (a mapping, `/wake` or `/agent`). */
export class RouteLimit {
  constructor(
    /** `route:wake`, `route:agent`, `mapping:<id>`: the bucket is kept across a reload under the same key and limit. */
    readonly key: string,
    readonly allow: AddressList | undefined,
    readonly bucket: TokenBucket | undefined,
  ) {}

  allows(clientIp: string): boolean {
    return this.allow === undefined || this.allow.contains(clientIp);
  }
}

interface Candidate {
  readonly limit: RouteLimit | undefined;
  /** Matched by `match.source`: only decidable once the body is parsed. */
  readonly bySource: boolean;
  readonly headers: ReadonlyArray<readonly [string, string]> | undefined;
}

/** `gate`'s answers besides a RouteLimit (decided: apply it) and null (no limit applies). */
export const UNDECIDED = Symbol('undecided');
export const FORBIDDEN = Symbol('forbidden');
export type Gate = RouteLimit | typeof UNDECIDED | typeof FORBIDDEN | null;

export const FORBIDDEN_SOURCE = new HttpError(
  403,
  'forbidden',
  'this client address may not post to this hook: the route accepts listed networks only (allowFrom); send from an allowed network or ask the operator to add yours',
);

export function routeRateLimited(retryAfter: number): HttpError {
  return new HttpError(429, 'rate_limited', `this hook's rate limit is reached; retry after ${retryAfter} s`, {
    'retry-after': String(retryAfter),
  });
}

export class RouteLimits {
  private constructor(
    private readonly direct: ReadonlyMap<string, RouteLimit>,
    private readonly byPath: ReadonlyMap<string, readonly Candidate[]>,
    private readonly wildcard: readonly Candidate[],
    private readonly byId: ReadonlyMap<string, RouteLimit>,
  ) {}

  /**
   * The route limits of `hooks` (null when none is set). Buckets of `previous` (the last generation) are kept for
   * routes whose key and `rateLimit` did not change; any other bucket starts full.
   */
  static compile(hooks: HooksConfig, previous: RouteLimits | null, now: number): RouteLimits | null {
    // Presets come after the custom mappings, as the router tries them; each carries its id (and owns its path).
    const mappings = allMappings(hooks);
    const any =
      mappings.some((m) => m.allowFrom || m.rateLimit) ||
      hooks.routes.wake !== undefined ||
      hooks.routes.agent !== undefined;
    if (!any) return null;
    const old = new Map<string, TokenBucket>();
    if (previous) for (const l of previous.all()) if (l.bucket) old.set(l.key, l.bucket);
    const make = (key: string, cfg: RouteLimitsConfig): RouteLimit | undefined => {
      if (!cfg.allowFrom && !cfg.rateLimit) return undefined;
      const kept = old.get(key);
      const rate = cfg.rateLimit;
      const bucket =
        rate &&
        (kept && kept.limit.perMinute === rate.perMinute && kept.limit.burst === rate.burst
          ? kept
          : new TokenBucket(rate, now));
      return new RouteLimit(key, cfg.allowFrom ? new AddressList(cfg.allowFrom) : undefined, bucket);
    };

    const direct = new Map<string, RouteLimit>();
    for (const name of ['wake', 'agent'] as const) {
      const cfg = hooks.routes[name];
      const l = cfg && make(`route:${name}`, cfg);
      if (l) direct.set(name, l);
    }
    const byId = new Map<string, RouteLimit>();
    const all = mappings.map((m, i) => {
      // The id the router reports (compile.ts): the post-body lookup goes by it.
      const id = m.id ?? `mapping-${i + 1}`;
      const limit = make(`mapping:${id}`, m);
      if (limit && !byId.has(id)) byId.set(id, limit);
      const headers =
        m.match?.headers && Object.keys(m.match.headers).length > 0 ? Object.entries(m.match.headers) : undefined;
      return { path: m.match?.path, candidate: { limit, bySource: m.match?.source !== undefined, headers } };
    });
    const wildcard = all.filter((c) => c.path === undefined).map((c) => c.candidate);
    const byPath = new Map<string, Candidate[]>();
    for (const { path } of all) {
      if (path === undefined || byPath.has(path)) continue;
      byPath.set(
        path,
        all.filter((c) => c.path === undefined || c.path === path).map((c) => c.candidate),
      );
    }
    return new RouteLimits(direct, byPath, wildcard, byId);
  }

  /**
   * Before the body: FORBIDDEN when the client may not post here, the decided route's RouteLimit when it has a
   * bucket, UNDECIDED when the mapping depends on the body, else null. No allocation.
   */
  gate(subPath: string, headers: IncomingHttpHeaders, clientIp: string): Gate {
    if (subPath === 'wake' || subPath === 'agent') {
      const d = this.direct.get(subPath);
      if (d === undefined) return null;
      if (!d.allows(clientIp)) return FORBIDDEN;
      return d.bucket ? d : null;
    }
    if (subPath === '') return null;
    const list = this.byPath.get(subPath) ?? this.wildcard;
    let undecided = false;
    let allowedByOne = false;
    for (let i = 0; i < list.length; i++) {
      const c = list[i]!;
      if (c.headers !== undefined && !headersMatch(c.headers, headers)) continue;
      const allowed = c.limit === undefined || c.limit.allows(clientIp);
      if (!c.bySource) {
        // This mapping takes every request that no earlier (source-matched) one took.
        if (!undecided) return !allowed ? FORBIDDEN : c.limit?.bucket ? c.limit : null;
        return allowed || allowedByOne ? UNDECIDED : FORBIDDEN;
      }
      undecided = true;
      if (allowed) allowedByOne = true;
    }
    // A source-matched mapping, a preset or nothing at all may take it: known after the body.
    return undecided ? UNDECIDED : null;
  }

  /** The limits of the mapping the router matched (after the body, for an UNDECIDED gate). */
  forMapping(id: string | null): RouteLimit | undefined {
    return id === null ? undefined : this.byId.get(id);
  }

  /** A route's bucket by key (`route:wake`, `mapping:<id>`): tests and diagnostics. */
  bucket(key: string): TokenBucket | undefined {
    for (const l of this.all()) if (l.key === key) return l.bucket;
    return undefined;
  }

  private *all(): Iterable<RouteLimit> {
    yield* this.direct.values();
    yield* this.byId.values();
  }
}

/** `match.headers` against the request's headers, as the router compares them (compile.ts `headersMatch`). */
function headersMatch(want: ReadonlyArray<readonly [string, string]>, headers: IncomingHttpHeaders): boolean {
  for (let i = 0; i < want.length; i++) {
    const [name, value] = want[i]!;
    // The router never sees credential headers, so a mapping cannot match on them.
    if (CREDENTIAL_HEADERS.has(name)) return false;
    const got = headers[name];
    if (got === undefined) return false;
    if ((typeof got === 'string' ? got : got.join(', ')).trim() !== value) return false;
  }
  return true;
}
