/**
 * `/healthz` (the process serves) and `/readyz` (it can do its work): no token, for load balancers and supervisors.
 * Readiness names each check, so a 503 says what fails: `store` (a write commits), `ingress` (the hooks listener
 * accepts connections), `config` (a config generation is loaded).
 */
import { StoreError } from '../errors.js';
import { sendJson } from '../ingress/respond.js';
import type { AdminRoute } from './route.js';

export interface HealthDeps {
  probeWrite(now: number): Promise<void>;
  ingressListening(): boolean;
  configLoaded(): boolean;
  now?: () => number;
}

/** How long the store's probe may take before it counts as failed (a hung store is not ready). */
export const PROBE_TIMEOUT_MS = 2000;

export interface Check {
  ok: boolean;
  /** Why it fails (absent when ok): a short reason, never a secret. */
  error?: string;
}

/** What a probe that did not answer in time rejects with. */
const TIMED_OUT = Symbol('timed out');

function withTimeout(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(TIMED_OUT), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export async function readiness(
  deps: HealthDeps,
): Promise<{ ok: boolean; checks: Record<'store' | 'ingress' | 'config', Check> }> {
  const now = deps.now ?? Date.now;
  const store = await withTimeout(deps.probeWrite(now()), PROBE_TIMEOUT_MS).then(
    (): Check => ({ ok: true }),
    // Short and generic: a driver's message may name a path or a URL with credentials.
    (err: unknown): Check => ({
      ok: false,
      error:
        err === TIMED_OUT
          ? `no answer within ${PROBE_TIMEOUT_MS} ms`
          : err instanceof StoreError
            ? 'the store does not commit writes'
            : 'the store failed',
    }),
  );
  const checks = {
    store,
    ingress: deps.ingressListening() ? { ok: true } : { ok: false, error: 'the hooks listener is not listening' },
    config: deps.configLoaded() ? { ok: true } : { ok: false, error: 'no config loaded' },
  };
  return { ok: Object.values(checks).every((c) => c.ok), checks };
}

export function healthRoutes(deps: HealthDeps): AdminRoute[] {
  return [
    { method: 'GET', path: '/healthz', auth: false, handle: ({ res }) => sendJson(res, 200, { ok: true }) },
    {
      method: 'GET',
      path: '/readyz',
      auth: false,
      async handle({ res }) {
        const r = await readiness(deps);
        sendJson(res, r.ok ? 200 : 503, r);
      },
    },
  ];
}
