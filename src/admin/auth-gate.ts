/**
 * The admin listener's bearer check with the hooks listener's auth-failure limiter (docs/security.md, "The admin
 * listener"): failures are counted per client address bucket (the socket's address, or X-Forwarded-For from a
 * trusted proxy, as on the hooks listener), `maxFailures` of them within `windowSeconds` lock the address out for
 * `lockoutSeconds`. Unlike a hook token, an admin token grants everything: while locked, the address is answered 429
 * even with the right token, so a lockout really stops guessing. Each lockout is logged (rate-limited, never the
 * token) and recorded in the audit trail. The counts are this process's own (a lockout is not shared with other nodes).
 */
import type { IncomingMessage } from 'node:http';
import type { Audit } from '../audit.js';
import { AdminError } from '../errors.js';
import { extractBearer } from '../ingress/auth.js';
import type { Logger } from '../log.js';
import { addressBucket, type ClientIpResolver } from '../net/client-ip.js';
import { type AuthFailureLimits, AuthFailureLimiter } from '../net/limiter.js';
import { RepeatLimitedLog } from '../net/log-repeats.js';

/** What the current config says about clients: read per connection and per request, so a reload applies at once. */
export interface AdminClientPolicy {
  /** The client's address behind `gateway.trustedProxies`: the config generation's resolver, the ingress's too. */
  clientIps: ClientIpResolver;
  /** `hooks.authFailureLimit`. */
  authFailureLimit: AuthFailureLimits;
}

const UNAUTHORIZED = (): AdminError =>
  new AdminError(401, 'unauthorized', 'Authorization: Bearer <admin token> required', { 'www-authenticate': 'Bearer' });

export class AdminAuthGate {
  private current: AdminClientPolicy;
  private readonly limiter: AuthFailureLimiter;
  private readonly log: RepeatLimitedLog;
  private readonly changed = new Set<(policy: AdminClientPolicy) => void>();

  constructor(
    /** The admin token's id, or undefined (admin/server.ts `adminAuthorizer`). */
    private readonly authorized: (presented: string | undefined) => string | undefined,
    private readonly clients: () => AdminClientPolicy,
    logger: Logger,
    audit?: Pick<Audit, 'record'>,
  ) {
    this.current = clients();
    this.limiter = new AuthFailureLimiter(this.current.authFailureLimit);
    this.log = new RepeatLimitedLog(logger);
    // One record per lockout (the limiter tells once per lockout, never per failure); the actor is the address bucket.
    if (audit)
      this.limiter.onLocked(
        (bucket, until, why) => void audit.record('lockout', bucket, { ...why, until, listener: 'admin' }),
      );
  }

  /** Told when a reload changed the policy (the connection guard's client addresses). */
  onChange(listener: (policy: AdminClientPolicy) => void): void {
    this.changed.add(listener);
  }

  /** The current policy; what depends on it is rebuilt when a reload changed it. */
  policy(): AdminClientPolicy {
    const next = this.clients();
    if (next.authFailureLimit !== this.current.authFailureLimit) this.limiter.setLimits(next.authFailureLimit);
    if (next !== this.current) {
      this.current = next;
      for (const l of this.changed) l(next);
    }
    return next;
  }

  /** Throws 429 `rate_limited` while the client is locked out, 401 `unauthorized` for a missing or wrong token. */
  check(req: IncomingMessage, now = Date.now()): void {
    const client = this.policy().clientIps.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for']);
    const wait = this.limiter.retryAfter(client, now);
    // Before the token is looked at: a locked-out client learns nothing about the tokens it tries.
    if (wait > 0) throw lockedOut(wait);
    if (this.authorized(extractBearer(req.headers)) !== undefined) return this.limiter.reset(client);
    const lockedFor = this.limiter.fail(client, now);
    if (lockedFor > 0) {
      this.log.warn(
        'rate_limited',
        { client: addressBucket(client), retryAfterSeconds: lockedFor },
        'admin auth throttled: client locked out after repeated wrong admin tokens',
      );
    } else
      this.log.warn(
        'unauthorized',
        { client: addressBucket(client) },
        'admin request refused: missing or wrong admin token',
      );
    throw UNAUTHORIZED();
  }
}

function lockedOut(seconds: number): AdminError {
  return new AdminError(
    429,
    'rate_limited',
    `too many failed admin authentications from this address; retry after ${seconds} s`,
    {
      'retry-after': String(seconds),
      connection: 'close',
    },
  );
}
