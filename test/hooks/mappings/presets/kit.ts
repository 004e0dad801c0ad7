/**
 * Shared by the sender preset tests (not a test file itself): a config with presets, and requests resolved by the
 * real routes exactly as the ingress hands them over, signed by hookgate's own signer for the preset's scheme (the
 * e2e tests sign with the senders' libraries).
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import pino from 'pino';
import { validateConfig } from '../../../../src/config/load.js';
import { buildHooksContext, type HooksContext } from '../../../../src/hooks/context.js';
import type { HookAction } from '../../../../src/hooks/dispatch.js';
import { signRequest } from '../../../../src/hooks/mappings/signatures.js';
import { createHookRoutes, type HookRoutes, type RouteResult } from '../../../../src/hooks/routes.js';
import { withoutCredentials } from '../../../../src/ingress/auth.js';
import type { NewRun } from '../../../../src/store/types.js';
import { NO_DIR } from '../../../config/helpers.js';
import { TOKEN } from '../../../support/token.js';

export const NOW = Date.parse('2026-03-01T12:00:00Z');
export const FRESH_KEY = (path: string) =>
  new RegExp(`^hook:${path}:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`);

export interface Kit {
  ctx: HooksContext;
  routes: HookRoutes;
}

export function kit(hooks: Record<string, unknown>, extra: Record<string, unknown> = {}): Kit {
  const config = validateConfig({ ...extra, hooks: { enabled: true, token: TOKEN, ...hooks } }, undefined, NO_DIR, {
    env: {},
  });
  return { ctx: buildHooksContext(config, 1), routes: createHookRoutes({ logger: pino({ level: 'silent' }) }) };
}

export interface Delivery {
  /** Headers besides the signature's (the event header, a content type). */
  headers?: Record<string, string>;
  /** The body as sent (default: the payload as JSON). */
  raw?: string;
  /** Sign with this secret instead of the preset's. */
  secret?: string;
  unsigned?: boolean;
  form?: boolean;
  now?: number;
}

/** A delivery to `path`, signed for the preset on that path, resolved without the hook token. */
export function deliver(
  k: Kit,
  path: string,
  payload: Record<string, unknown>,
  d: Delivery = {},
): Promise<RouteResult> {
  const raw = Buffer.from(d.raw ?? JSON.stringify(payload));
  const m = k.ctx.routes.mapped.mappings.find((x) => x.path === path && x.signature);
  assert.ok(m?.signature, `no signed preset on ${path}`);
  const cfg = d.secret === undefined ? m.signature : { ...m.signature, secrets: [d.secret] };
  const headers: IncomingHttpHeaders = { ...(d.unsigned ? {} : signRequest(cfg, raw, d.now ?? NOW)), ...d.headers };
  return k.routes.resolve({
    ctx: k.ctx,
    subPath: path,
    payload,
    rawBody: raw,
    headers: withoutCredentials(headers),
    rawHeaders: headers,
    query: new URLSearchParams(),
    now: NOW,
    tokenVerified: false,
    ...(d.form ? { form: true } : {}),
  });
}

export async function actionOf(
  k: Kit,
  path: string,
  payload: Record<string, unknown>,
  d: Delivery = {},
): Promise<{ result: Extract<RouteResult, { kind: 'actions' }>; action: HookAction }> {
  const result = await deliver(k, path, payload, d);
  assert.equal(result.kind, 'actions', JSON.stringify(result));
  const r = result as Extract<RouteResult, { kind: 'actions' }>;
  assert.equal(r.actions.length, 1);
  return { result: r, action: r.actions[0]! };
}

export async function runOf(k: Kit, path: string, payload: Record<string, unknown>, d: Delivery = {}): Promise<NewRun> {
  const { action } = await actionOf(k, path, payload, d);
  assert.equal(action.kind, 'agent');
  return (action as Extract<HookAction, { kind: 'agent' }>).run;
}
