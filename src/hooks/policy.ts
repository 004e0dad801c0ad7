import { newId } from '../ids.js';
import { accountProblem, agentAllowed, normalizeChannelName, resolveAgentId, startsWithAny } from '../config/lookup.js';
import { DEFAULT_ACCOUNT_ID } from '../config/schema/accounts.js';
import { HttpError } from '../errors.js';
import { logSafe } from '../text-safe.js';
import { ownSessionKey } from '../store/own-session.js';
import { type ContentSource, MAIN_SESSION_KEY, type NewRun } from '../store/types.js';
import type { HooksContext } from './context.js';
import type { AgentRequest } from './normalize.js';

/** Where a session key came from: the request body, a mapping's literal, a mapping's template, or nowhere. */
export type SessionKeySource = 'request' | 'static' | 'templated';

export interface RunOrigin {
  hookPath: string;
  mappingId: string | null;
  contentSource: ContentSource;
  sessionKeySource: SessionKeySource;
  allowUnsafeExternalContent: boolean;
}

/**
 * The agent actually used, once the allowlist admits it. A request's unknown id is a 400 naming the configured ones
 * (as OpenClaw answers it); a mapping's (config, or its transform) falls back to the default agent, as in OpenClaw.
 */
export function resolveAgent(ctx: HooksContext, requested: string | undefined, strict = false): string {
  if (strict && requested !== undefined) requireKnownAgent(ctx, requested);
  if (!agentAllowed(requested, ctx.config)) {
    throw new HttpError(400, 'agent_not_allowed', 'agentId is not allowed by hooks.allowedAgentIds');
  }
  return resolveAgentId(requested, ctx.config);
}

/** An `agentId` a request names must be a configured agent: else 400 `invalid_agent`, naming them. */
export function requireKnownAgent(ctx: HooksContext, requested: string): void {
  const id = requested.trim().toLowerCase();
  const list = ctx.config.agents.list;
  if (id === ctx.defaultAgentId || list.some((a) => a.id === id)) return;
  const ids = [...new Set([ctx.defaultAgentId, ...list.map((a) => a.id)])].join(', ');
  throw new HttpError(
    400,
    'invalid_agent',
    `unknown agentId "${logSafe(requested, 64)}"; the configured agents are: ${ids}`,
  );
}

/** Session-key policy for a supplied key: request keys are opt-in, and every key obeys the prefixes. */
export function checkSessionKey(ctx: HooksContext, key: string, source: SessionKeySource): string {
  const { allowRequestSessionKey, allowedSessionKeyPrefixes: prefixes } = ctx.config.hooks;
  if (source !== 'static' && !allowRequestSessionKey) {
    throw new HttpError(
      400,
      'session_key_not_allowed',
      source === 'request'
        ? 'sessionKey is disabled for external hook payloads (/hooks/agent, /hooks/wake); set hooks.allowRequestSessionKey=true to enable'
        : 'a templated mapping sessionKey needs hooks.allowRequestSessionKey=true',
    );
  }
  if (prefixes?.length && !startsWithAny(key, prefixes)) {
    throw new HttpError(400, 'session_key_not_allowed', `sessionKey must start with one of: ${prefixes.join(', ')}`);
  }
  return key;
}

/**
 * A run's session: the key it brings (checked), else `hooks.defaultSessionKey`, else the run's own, `hook:<run id>`
 * (own-session.ts). The id is a UUIDv7 (ids.ts), so the transcripts' session index grows at its end: random keys put
 * each run at a random leaf, and a commit of 30 runs rewrote ~90 scattered pages.
 */
export function resolveSessionKey(
  ctx: HooksContext,
  key: string | undefined,
  source: SessionKeySource,
  runId: string,
): string {
  if (key !== undefined) return checkSessionKey(ctx, key, source);
  return ctx.config.hooks.defaultSessionKey ?? ownSessionKey(runId);
}

/**
 * Where a wake's event goes: the main session, or the session a request (or mapping) names, under the same policy
 * as an agent request's key (opt-in, prefixes). Without a key it is always the main session, never
 * `defaultSessionKey` (that default is for agent runs).
 */
export function resolveWakeSessionKey(ctx: HooksContext, key: string | undefined, source: SessionKeySource): string {
  return key === undefined ? MAIN_SESSION_KEY : checkSessionKey(ctx, key, source);
}

/** `last` or a configured channel; anything else is a 400 naming what is configured. */
export function resolveChannel(ctx: HooksContext, channel: string): string {
  const c = normalizeChannelName(channel);
  if (c === 'last' || ctx.channelIds.has(c)) return c;
  const configured = ['last', ...ctx.channelIds].join(', ');
  throw new HttpError(400, 'invalid_channel', `channel "${channel}" is not configured; use one of: ${configured}`);
}

/**
 * A request's `to` must be a recipient of its channel (the platform's shape: recipients.ts), or a 400 that names the
 * shape: a `to` of `..` would otherwise be put into the platform's API path, and a webhook target that does not exist
 * would cost a model run before its delivery failed. For `last` only the shared rule applies here (the platform is
 * known at delivery, where the outbox checks again).
 */
export function resolveRecipient(ctx: HooksContext, channel: string, to: string | undefined): string | null {
  if (to === undefined) return null;
  const problem = ctx.checkRecipient(channel, to);
  if (problem) throw new HttpError(400, 'invalid_channel', problem);
  return to;
}

/**
 * The account a run is delivered through: null for the channel's default account (no `accountId`, or `default`).
 * It needs an explicit channel, and one of that channel's configured accounts; anything else is a 400 that says
 * what to change, never a silent fallback to another account.
 */
export function resolveAccount(ctx: HooksContext, channel: string, requested: string | undefined): string | null {
  if (requested === undefined) return null;
  const accountId = requested.toLowerCase();
  const problem = accountProblem(ctx.channelAccounts, channel, accountId);
  if (problem) throw new HttpError(400, 'invalid_channel', problem);
  return accountId === DEFAULT_ACCOUNT_ID ? null : accountId;
}

export function resolveModel(ctx: HooksContext, model: string | undefined): string | null {
  if (model === undefined) return null;
  const r = ctx.catalog.resolveAllowed(model);
  if (!r.ok) throw new HttpError(400, 'model_not_allowed', r.reason);
  return r.model.ref;
}

/** Apply every policy to a validated agent request and produce the run to store. */
export function buildRun(ctx: HooksContext, req: AgentRequest, origin: RunOrigin, now: number): NewRun {
  // A persistent session needs a stable key: a fresh `hook:<uuid>` would start a new session every time.
  if (
    req.sessionMode === 'persistent' &&
    req.sessionKey === undefined &&
    ctx.config.hooks.defaultSessionKey === undefined
  ) {
    throw new HttpError(
      400,
      'invalid_payload',
      'sessionKey is required when sessionMode is persistent (send sessionKey, allowed by hooks.allowRequestSessionKey, or set hooks.defaultSessionKey)',
    );
  }
  const agentId = resolveAgent(ctx, req.agentId, origin.mappingId === null);
  const id = newId();
  const sessionKey = resolveSessionKey(ctx, req.sessionKey, origin.sessionKeySource, id);
  const channel = resolveChannel(ctx, req.channel);
  const accountId = resolveAccount(ctx, channel, req.accountId);
  const model = resolveModel(ctx, req.model);
  const agent = ctx.config.agents.list.find((a) => a.id === agentId);
  return {
    id,
    agentId,
    sessionKey,
    sessionMode: req.sessionMode,
    name: req.name,
    message: req.message,
    wakeMode: req.wakeMode,
    deliver: req.deliver,
    channel,
    to: resolveRecipient(ctx, channel, req.to),
    accountId,
    model,
    thinking: req.thinking ?? null,
    timeoutSeconds: req.timeoutSeconds ?? agent?.timeoutSeconds ?? ctx.config.agents.defaults.timeoutSeconds,
    allowUnsafeExternalContent: origin.allowUnsafeExternalContent,
    contentSource: origin.contentSource,
    hookPath: origin.hookPath,
    mappingId: origin.mappingId,
    createdAt: now,
  };
}
