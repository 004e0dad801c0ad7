/**
 * Per request: a matched mapping's action rendered from its templates, overridden by its transform, validated, and
 * put through the same policy as a direct `/hooks/agent` request (`buildRun`).
 *
 * Transforms are trusted code (see transforms.ts): they run in this process with its privileges.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { HttpError, type MappingFailureCode } from '../../errors.js';
import type { ContentSource, SessionMode, WakeMode } from '../../store/types.js';
import { describeKind, firstLine, identifierOrUndefined } from '../../text-safe.js';
import type { HookAction } from '../dispatch.js';
import {
  accountId,
  type AgentRequest,
  optionalBoolean,
  optionalString,
  parseWakeMode,
  sessionMode,
  timeoutSeconds,
} from '../normalize.js';
import { buildRun, resolveWakeSessionKey, type SessionKeySource } from '../policy.js';
import type { HookRequest } from '../routes.js';
import { type Compiled, type CompiledMapping, loadTransformOf } from './compile.js';
import type { CompiledTemplate, TemplateContext } from './templates.js';
import type { TransformFn, TransformInput } from './transforms.js';

/**
 * Headers as templates and transforms see them: lower-cased names, repeats joined. Credential headers are already
 * gone (the ingress strips them, from the one list in ingress/auth.ts).
 */
export function headerRecord(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (value === undefined || key === '__proto__') continue;
    out[key] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

export function queryRecord(query: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of query) if (k !== '__proto__' && !Object.hasOwn(out, k)) out[k] = v;
  return out;
}

/**
 * The URL a transform sees (`TransformInput.url`): the hook's path under `hooks.path` with the query as received,
 * on a fixed `http://localhost` origin (as OpenClaw builds it; the `Host` header is the sender's to choose).
 */
export function transformUrl(hooksPath: string, subPath: string, rawQuery: string | undefined): URL {
  const base = hooksPath.endsWith('/') ? hooksPath : `${hooksPath}/`;
  const url = new URL('http://localhost');
  url.pathname = `${base}${subPath}`;
  if (rawQuery !== undefined) url.search = rawQuery;
  return url;
}

/** An action being built: the mapping's rendered fields, then the transform's overrides. */
export interface Draft {
  kind: 'wake' | 'agent';
  text: string | undefined;
  message: string | undefined;
  wakeMode: WakeMode;
  name: string | undefined;
  agentId: string | undefined;
  sessionKey: string | undefined;
  sessionKeySource: SessionKeySource;
  sessionMode: SessionMode;
  deliver: boolean;
  channel: string | undefined;
  to: string | undefined;
  accountId: string | undefined;
  model: string | undefined;
  thinking: string | undefined;
  timeoutSeconds: number | undefined;
  allowUnsafeExternalContent: boolean;
}

/** Blank after trimming → unset. */
function rendered(t: CompiledTemplate | undefined, tctx: TemplateContext): string | undefined {
  if (t === undefined) return undefined;
  const s = t(tctx).trim();
  return s === '' ? undefined : s;
}

export function baseDraft(m: CompiledMapping, tctx: TemplateContext): Draft {
  const t = m.templates;
  return {
    kind: m.action,
    text: m.action === 'wake' ? rendered(t.text, tctx) : undefined,
    message: m.action === 'agent' ? rendered(t.message, tctx) : undefined,
    wakeMode: m.wakeMode,
    name: rendered(t.name, tctx),
    agentId: m.agentId,
    sessionKey: rendered(t.sessionKey, tctx),
    sessionKeySource: m.sessionKeySource,
    sessionMode: m.sessionMode,
    deliver: m.deliver,
    channel: rendered(t.channel, tctx),
    to: rendered(t.to, tctx),
    accountId: rendered(t.accountId, tctx),
    model: rendered(t.model, tctx),
    thinking: rendered(t.thinking, tctx),
    timeoutSeconds: m.timeoutSeconds,
    allowUnsafeExternalContent: m.allowUnsafeExternalContent,
  };
}

/**
 * A mapping failure: answered 500 `mapping_failed` with `reason` (short, never payload data). The log line carries
 * `code` and, for a throw, the thrown value's class and `code` property; `detail` (an error message, which may quote
 * the payload: V8's JSON.parse error does) is logged only at `debug`.
 */
export class MappingFailure extends Error {
  constructor(
    readonly reason: string,
    readonly code: MappingFailureCode,
    readonly detail?: string,
    readonly thrown?: { errorClass: string; errorCode?: string },
  ) {
    super(reason);
  }
}

/** What a transform threw, as identifiers only (see `MappingFailure`). */
function thrownOf(err: unknown): { errorClass: string; errorCode?: string } {
  const errorClass = err instanceof Error ? (identifierOrUndefined(err.name) ?? 'Error') : typeof err;
  const raw = err !== null && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  const errorCode = identifierOrUndefined(typeof raw === 'number' ? String(raw) : raw);
  return errorCode === undefined ? { errorClass } : { errorClass, errorCode };
}

const STRING_FIELDS = ['name', 'agentId', 'sessionKey', 'channel', 'to', 'model', 'thinking'] as const;

/**
 * Merges a transform's result over the draft. Absent (`undefined` / `null`) fields keep the mapping's value; present
 * ones must have the right type, else the mapping fails (a bug in the transform, not the sender's fault). Unknown keys
 * are ignored. A `sessionKey` from a transform counts as external (`templated`) for the session-key policy, unless
 * the transform also returns `sessionKeySource: "static"` (see `keySource`).
 */
export function applyOverride(d: Draft, o: Record<string, unknown>): Draft {
  // The same field rules as a direct request (hooks/normalize.ts); a violation is the transform's bug, not the sender's.
  const take = <T>(field: string, parse: () => T): T => {
    try {
      return parse();
    } catch (err) {
      if (err instanceof HttpError)
        throw new MappingFailure(`transform returned an invalid ${field}`, 'transform_invalid_field', err.message);
      throw err;
    }
  };
  const present = (k: string) => o[k] !== undefined && o[k] !== null;
  const out: Draft = { ...d };
  if (present('kind')) {
    if (o.kind !== 'wake' && o.kind !== 'agent') {
      throw new MappingFailure(
        'transform returned an invalid kind',
        'transform_invalid_field',
        `kind is ${describeKind(o.kind)}; expected "wake" or "agent"`,
      );
    }
    out.kind = o.kind;
  }
  for (const k of ['text', 'message', ...STRING_FIELDS] as const) {
    if (present(k)) out[k] = take(k, () => optionalString(o, k));
  }
  if (present('sessionKey')) out.sessionKeySource = 'templated';
  if (present('sessionKeySource')) out.sessionKeySource = take('sessionKeySource', () => keySource(o.sessionKeySource));
  for (const k of ['mode', 'wakeMode'] as const) {
    if (present(k)) out.wakeMode = take(k, () => parseWakeMode(o[k], k));
  }
  if (present('sessionMode')) out.sessionMode = take('sessionMode', () => sessionMode(o.sessionMode));
  for (const k of ['deliver', 'allowUnsafeExternalContent'] as const) {
    if (present(k)) out[k] = take(k, () => optionalBoolean(o, k))!;
  }
  if (present('accountId')) out.accountId = take('accountId', () => accountId(o.accountId));
  if (present('timeoutSeconds')) out.timeoutSeconds = take('timeoutSeconds', () => timeoutSeconds(o.timeoutSeconds));
  return out;
}

/**
 * A transform's `sessionKeySource` (OpenClaw's field): trusted code may vouch that the key it returns is fixed
 * (`static`: no `hooks.allowRequestSessionKey` needed, the prefixes still apply), or say it comes from the payload.
 */
function keySource(v: unknown): SessionKeySource {
  if (v === 'static' || v === 'templated') return v;
  throw new HttpError(
    400,
    'invalid_payload',
    `sessionKeySource is ${describeKind(v)}; expected "static" or "templated"`,
  );
}

export async function runTransform(
  m: CompiledMapping,
  c: Compiled,
  input: TransformInput,
): Promise<Record<string, unknown> | null | undefined> {
  const t = m.transform!;
  if (t.unavailable !== undefined)
    throw new MappingFailure('transform module unavailable', 'transform_unavailable', t.unavailable);
  let fn: TransformFn;
  try {
    fn = await loadTransformOf(t, c.loader!);
  } catch (err) {
    throw new MappingFailure('transform module could not be loaded', 'transform_load_failed', firstLine(err));
  }
  let out: unknown;
  try {
    out = await fn(input);
  } catch (err) {
    const thrown = thrownOf(err);
    throw new MappingFailure('transform threw', 'transform_threw', `${thrown.errorClass}: ${firstLine(err)}`, thrown);
  }
  if (out === null || out === undefined) return out;
  if (typeof out !== 'object' || Array.isArray(out)) {
    throw new MappingFailure(
      `transform returned ${describeKind(out)}`,
      'transform_bad_result',
      'expected an action object, or null to skip',
    );
  }
  return out as Record<string, unknown>;
}

/** Validates a finished draft and turns it into an action, with the same policy as a direct request. */
export function finish(
  d: Draft,
  m: CompiledMapping,
  input: Pick<HookRequest, 'ctx' | 'subPath' | 'now'>,
  contentSource: ContentSource,
): HookAction {
  if (d.kind === 'wake') {
    if (d.text === undefined) throw new HttpError(400, 'invalid_payload', 'hook mapping requires text');
    const sessionKey = resolveWakeSessionKey(input.ctx, d.sessionKey, d.sessionKeySource);
    // Rendered from the payload or made by a transform from it: untrusted, shown wrapped at the heartbeat and named by
    // the mapping's id (config, not payload). `allowUnsafeExternalContent` opts out, as it does for runs.
    if (d.allowUnsafeExternalContent) return { kind: 'wake', text: d.text, mode: d.wakeMode, sessionKey };
    return { kind: 'wake', text: d.text, mode: d.wakeMode, sessionKey, untrusted: true, source: m.id };
  }
  if (d.message === undefined) throw new HttpError(400, 'invalid_payload', 'hook mapping requires message');
  const req: AgentRequest = {
    message: d.message,
    name: d.name ?? 'Hook',
    agentId: d.agentId,
    sessionKey: d.sessionKey,
    sessionMode: d.sessionMode,
    wakeMode: d.wakeMode,
    deliver: d.deliver,
    channel: d.channel ?? 'last',
    to: d.to,
    accountId: d.accountId,
    model: d.model,
    thinking: d.thinking,
    timeoutSeconds: d.timeoutSeconds,
  };
  const run = buildRun(
    input.ctx,
    req,
    {
      hookPath: input.subPath,
      mappingId: m.id,
      contentSource,
      sessionKeySource: d.sessionKeySource,
      allowUnsafeExternalContent: d.allowUnsafeExternalContent,
    },
    input.now,
  );
  return { kind: 'agent', run };
}
