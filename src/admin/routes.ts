/**
 * Every route of the admin listener, composed in one place: each feature adds its list here (one line), so app.ts
 * stays small and the router sees them all. Order matters only for identical paths (none).
 */
import type { Logger } from '../log.js';
import type { TokenSet } from '../ingress/auth.js';
import type { Store } from '../store/types.js';
import type { Audit } from '../audit.js';
import { type AdminSignals, apiRoutes } from './api.js';
import { auditRoutes } from './audit-route.js';
import { dashboardRoutes } from './dashboard.js';
import { healthRoutes } from './health.js';
import type { Observability } from './observe.js';
import type { AdminRoute } from './route.js';
import type { AdminClientPolicy } from './auth-gate.js';
import { type AdminListener, type AdminTokens, startAdminServer } from './server.js';
import { secretSourceOf } from '../config/client.js';

/** What the admin features read: the app's parts they need. A feature needing more adds a field here. */
export interface AdminDeps {
  store: Store;
  signals: AdminSignals;
  logger: Logger;
  /** Whether the hooks listener accepts connections (`/readyz`). */
  ingressListening(): boolean;
  /** Whether a config generation is loaded (`/readyz`). */
  configLoaded(): boolean;
  /** The live feed and the metrics (`/api/v1/events`, `/metrics`). */
  observability?: Observability;
  /** The audit trail: repairs are recorded in it (`GET /api/v1/audit` lists it from the store). */
  audit?: Pick<Audit, 'record'>;
}

export function adminRoutes(deps: AdminDeps): AdminRoute[] {
  return [
    ...healthRoutes({
      probeWrite: (now) => deps.store.probeWrite(now),
      ingressListening: deps.ingressListening,
      configLoaded: deps.configLoaded,
    }),
    ...apiRoutes({
      store: deps.store,
      signals: deps.signals,
      ...(deps.audit ? { audit: deps.audit } : {}),
      ...(deps.observability ? { feed: deps.observability.feed } : {}),
    }),
    ...auditRoutes(deps.store),
    ...(deps.observability?.routes() ?? []),
    ...dashboardRoutes(),
  ];
}

export interface AdminSettings {
  enabled: boolean;
  bind: string;
  port: number;
}

/** What the current config says about who may call the admin listener: its tokens, trusted proxies and auth-failure limit. */
export interface AdminAccess {
  tokens: AdminTokens;
  clients: () => AdminClientPolicy;
}

/**
 * Start the admin listener when `admin.enabled` (undefined otherwise). Bind and port are the ones at start (a reload
 * that changes them applies at the next restart); the access is read per request, so a new `admin.token` or
 * `admin.tokens` (or trusted proxies, or auth-failure limit) applies at once.
 */
export async function startAdmin(
  settings: AdminSettings,
  access: AdminAccess,
  deps: AdminDeps,
): Promise<AdminListener | undefined> {
  if (!settings.enabled) return undefined;
  return startAdminServer({
    bind: settings.bind,
    port: settings.port,
    routes: adminRoutes(deps),
    tokens: access.tokens,
    clients: access.clients,
    logger: deps.logger,
    ...(deps.audit ? { audit: deps.audit } : {}),
  });
}

/** What the admin listener reads from a config generation (src/generation.ts builds them once per generation). */
export interface AdminView {
  readonly adminTokens: TokenSet;
  /** The hook tokens: refused as admin tokens. The same set the ingress accepts. */
  readonly hookTokens: TokenSet;
  readonly adminClients: AdminClientPolicy;
}

/**
 * The access of the current generation, read per request: a reload's new `admin.token`/`admin.tokens` (or hook
 * tokens, trusted proxies, auth-failure limit) apply at once; a request allocates none.
 */
export function generationAccess(current: () => AdminView): AdminAccess {
  return {
    tokens: { admin: () => current().adminTokens, hooks: () => current().hookTokens },
    clients: () => current().adminClients,
  };
}

/** The line `serve` prints at start: the dashboard's URL and where the token is (never the token itself). */
export function adminNotice(url: string, configFile: string | undefined, env: NodeJS.ProcessEnv): string {
  const token = configFile
    ? secretSourceOf(configFile, 'admin')
    : env.HOOKGATE_ADMIN_TOKEN?.trim()
      ? '$HOOKGATE_ADMIN_TOKEN'
      : './data/admin-token';
  return `hookgate: dashboard and admin API at ${url}/ (token: ${token})\n`;
}
