/**
 * Mapped hooks: `POST {hooks.path}/<name>` resolved through `hooks.mappings` (custom, in order) and then the presets.
 *
 * Per config generation (once, on the first mapped request or signature check of that generation): every mapping is
 * compiled — templates parsed, transform modules resolved and imported through one `TransformLoader`, candidate
 * lists per `match.path` and the signature-authenticated paths precomputed. Per request: pick the first mapping whose
 * `match.path` equals the sub-path and whose `match.source` equals `payload.source`, authenticate the request for
 * that mapping (its signature, else the shared token), render its action (per item for a `forEach` fan-out), apply
 * its transform, validate, and apply the same policy as a direct `/hooks/agent` request (`buildRun`).
 *
 * Authentication rule for signatures (CONTRACT §4.3, §6): a sub-path is *signature-capable* when any mapping that
 * could match it by path (same `match.path`, or no `match.path`) has a `signature`. On such a path the body is read
 * before authentication and the mapping that actually matches (path + source) decides: its signature when it has one
 * (the shared token is then not an alternative), the shared token otherwise; when nothing matches, the shared token
 * (so an unknown path still answers 401 before 404). Every other path is authenticated by the token before the body
 * is read, as for `/wake` and `/agent`. `/wake` and `/agent` never reach mappings.
 *
 * Transforms are trusted code (see transforms.ts): they run in this process with its privileges.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { MappingConfig, SignatureConfig } from '../config/schema/hooks.js';
import { ConfigError, HttpError, mappingFailed } from '../errors.js';
import type { MappedRequest, MappedResult, MappedRoutes } from '../ingress/handler.js';
import type { ContentSource, SessionMode, WakeMode } from '../store/types.js';
import type { HooksContext } from './context.js';
import type { HookAction } from './dispatch.js';
import { fanOutPayloads } from './fan-out.js';
import { type AgentRequest, optionalBoolean, optionalString, parseWakeMode, sessionMode, timeoutSeconds } from './normalize.js';
import { buildRun, type SessionKeySource } from './policy.js';
import { gmailBodyAllowance, type PresetName, presetMappings } from './presets.js';
import { verifySignature } from './signatures.js';
import { type CompiledTemplate, compileTemplate, isTemplated, type TemplateContext } from './templates.js';
import { describeKind, resolveTransformModule, resolveTransformsDir, type TransformFn, type TransformInput, TransformLoader } from './transforms.js';

// ---------------------------------------------------------------------------------------------------------------
// Compiled form (one per config generation)
// ---------------------------------------------------------------------------------------------------------------

interface CompiledTransform {
  /** Set when the module could not be resolved at compile time (moved or deleted since the config was checked). */
  unavailable?: string;
  file?: string;
  exportName?: string;
  /** The loaded function, held here so it survives the loader's disposal when the next generation arrives. */
  fn?: Promise<TransformFn>;
}

export interface CompiledMapping {
  readonly id: string;
  /** `hooks.mappings[i]` index, or undefined for a preset. */
  readonly index: number | undefined;
  readonly preset: PresetName | undefined;
  readonly path: string | undefined;
  readonly source: string | undefined;
  readonly action: 'wake' | 'agent';
  readonly wakeMode: WakeMode;
  readonly sessionMode: SessionMode;
  readonly deliver: boolean;
  readonly allowUnsafeExternalContent: boolean;
  readonly agentId: string | undefined;
  readonly timeoutSeconds: number | undefined;
  readonly forEach: string | undefined;
  readonly signature: SignatureConfig | undefined;
  readonly sessionKeySource: SessionKeySource;
  readonly templates: {
    readonly text: CompiledTemplate | undefined;
    readonly message: CompiledTemplate | undefined;
    readonly name: CompiledTemplate | undefined;
    readonly sessionKey: CompiledTemplate | undefined;
    readonly channel: CompiledTemplate | undefined;
    readonly to: CompiledTemplate | undefined;
    readonly model: CompiledTemplate | undefined;
    readonly thinking: CompiledTemplate | undefined;
  };
  readonly transform: CompiledTransform | undefined;
}

interface Compiled {
  readonly ctx: HooksContext;
  readonly generation: number;
  readonly mappings: readonly CompiledMapping[];
  /** Candidates (in order) for each explicit `match.path`; other paths use `wildcard`. */
  readonly byPath: ReadonlyMap<string, readonly CompiledMapping[]>;
  /** Mappings without `match.path` (they match every mapped sub-path). */
  readonly wildcard: readonly CompiledMapping[];
  /** Sub-paths whose candidates include a signature mapping; `wildcardSigned` covers every other path. */
  readonly signedPaths: ReadonlySet<string>;
  readonly wildcardSigned: boolean;
  /** Per-path body limits above `hooks.maxBodyBytes` (the gmail preset's path). */
  readonly bodyLimits: ReadonlyMap<string, number>;
  readonly loader: TransformLoader | undefined;
}

function configErrorText(err: unknown): string {
  if (err instanceof ConfigError) return err.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  return err instanceof Error ? err.message : String(err);
}

const optionalTemplate = (s: string | undefined): CompiledTemplate | undefined => (s === undefined ? undefined : compileTemplate(s));

function compileMapping(
  m: MappingConfig,
  index: number | undefined,
  preset: PresetName | undefined,
  transforms: { dir: string | undefined; dirError: string | undefined; loader: TransformLoader | undefined },
): CompiledMapping {
  let transform: CompiledTransform | undefined;
  if (m.transform) {
    const keyPath = index === undefined ? `hooks.presets.${preset}.transform.module` : `hooks.mappings[${index}].transform.module`;
    if (transforms.dir === undefined || transforms.loader === undefined) {
      transform = { unavailable: transforms.dirError ?? 'transforms directory unavailable' };
    } else {
      try {
        const file = resolveTransformModule(transforms.dir, m.transform.module, keyPath);
        transform = { file, exportName: m.transform.export };
      } catch (err) {
        transform = { unavailable: configErrorText(err) };
      }
    }
  }
  return {
    id: m.id ?? (index === undefined ? (preset ?? 'preset') : `mapping-${index + 1}`),
    index,
    preset,
    path: m.match?.path,
    source: m.match?.source,
    action: m.action,
    wakeMode: m.wakeMode,
    sessionMode: m.sessionMode ?? 'isolated',
    deliver: m.deliver,
    allowUnsafeExternalContent: m.allowUnsafeExternalContent,
    agentId: m.agentId,
    timeoutSeconds: m.timeoutSeconds,
    forEach: m.forEach,
    signature: m.signature,
    // A preset's key is hookgate's own template with a fixed namespace (`hook:gmail:{{…}}`): the payload picks only
    // the part inside it, so it is treated like a static key (no allowRequestSessionKey opt-in; prefixes still
    // apply). OpenClaw required the opt-in here and every Gmail push got 400 until users opened it for all callers.
    sessionKeySource: m.sessionKey !== undefined && isTemplated(m.sessionKey) && preset === undefined ? 'templated' : 'static',
    templates: {
      text: optionalTemplate(m.textTemplate),
      message: optionalTemplate(m.messageTemplate),
      name: optionalTemplate(m.name),
      sessionKey: optionalTemplate(m.sessionKey),
      channel: optionalTemplate(m.channel),
      to: optionalTemplate(m.to),
      model: optionalTemplate(m.model),
      thinking: optionalTemplate(m.thinking),
    },
    transform,
  };
}

/** Compiles the mappings of one config generation (custom first, then presets). Synchronous; starts transform imports. */
export function compileMappings(ctx: HooksContext): Compiled {
  const hooks = ctx.config.hooks;
  const needsTransforms = hooks.mappings.some((m) => m.transform);
  let dir: string | undefined;
  let dirError: string | undefined;
  let loader: TransformLoader | undefined;
  if (needsTransforms) {
    try {
      dir = resolveTransformsDir(ctx.config.dir, hooks.transformsDir);
      loader = new TransformLoader({ root: dir });
    } catch (err) {
      dirError = configErrorText(err);
    }
  }
  const t = { dir, dirError, loader };
  const mappings: CompiledMapping[] = hooks.mappings.map((m, i) => compileMapping(m, i, undefined, t));
  for (const p of presetMappings(hooks)) mappings.push(compileMapping(p.mapping, undefined, p.name, t));

  const paths = new Set<string>();
  for (const m of mappings) if (m.path !== undefined) paths.add(m.path);
  const wildcard = mappings.filter((m) => m.path === undefined);
  const byPath = new Map<string, CompiledMapping[]>();
  const signedPaths = new Set<string>();
  for (const p of paths) {
    const list = mappings.filter((m) => m.path === undefined || m.path === p);
    byPath.set(p, list);
    if (list.some((m) => m.signature)) signedPaths.add(p);
  }
  const bodyLimits = new Map<string, number>();
  if (hooks.presets.includes('gmail')) {
    const allowance = gmailBodyAllowance(hooks);
    if (allowance > hooks.maxBodyBytes) bodyLimits.set('gmail', allowance);
  }

  // Import every transform now: the first request does not pay for it, and the functions are held by the
  // compiled mappings, so they keep working after this generation's loader is disposed.
  if (loader) for (const m of mappings) if (m.transform?.file) loadTransformOf(m.transform, loader);

  return {
    ctx,
    generation: ctx.generation,
    mappings,
    byPath,
    wildcard,
    signedPaths,
    wildcardSigned: wildcard.some((m) => m.signature),
    bodyLimits,
    loader,
  };
}

function loadTransformOf(t: CompiledTransform, loader: TransformLoader): Promise<TransformFn> {
  if (t.fn) return t.fn;
  const p = loader.load(t.file!, t.exportName);
  t.fn = p;
  // A failed import is not kept: the next request retries (and reports the then-current error).
  p.catch(() => {
    if (t.fn === p) t.fn = undefined;
  });
  return p;
}

/** The mappings that could handle `subPath`, in order. */
function candidates(c: Compiled, subPath: string): readonly CompiledMapping[] {
  return c.byPath.get(subPath) ?? c.wildcard;
}

/** First match wins: `match.path` (already filtered) and `match.source` equal to the payload's string `source`. */
export function matchMapping(c: Compiled, subPath: string, payload: Record<string, unknown>): CompiledMapping | undefined {
  const list = candidates(c, subPath);
  if (list.length === 0) return undefined;
  const src = Object.hasOwn(payload, 'source') ? payload.source : undefined;
  for (const m of list) {
    if (m.source !== undefined && m.source !== src) continue;
    return m;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Per request
// ---------------------------------------------------------------------------------------------------------------

/** Credentials never reach templates or transforms (a `{{headers.authorization}}` would leak the token). */
const HIDDEN_HEADERS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization', 'x-hookgate-token', 'x-openclaw-token', 'cookie']);

function headerRecord(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (value === undefined || HIDDEN_HEADERS.has(key) || key === '__proto__') continue;
    out[key] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function queryRecord(query: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of query) if (k !== '__proto__' && !Object.hasOwn(out, k)) out[k] = v;
  return out;
}

/** An action being built: the mapping's rendered fields, then the transform's overrides. */
interface Draft {
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

function baseDraft(m: CompiledMapping, tctx: TemplateContext): Draft {
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
    model: rendered(t.model, tctx),
    thinking: rendered(t.thinking, tctx),
    timeoutSeconds: m.timeoutSeconds,
    allowUnsafeExternalContent: m.allowUnsafeExternalContent,
  };
}

/** A mapping failure: answered 500 `mapping_failed` with `reason` (short, never payload data); `detail` is logged. */
class MappingFailure extends Error {
  constructor(
    readonly reason: string,
    readonly detail?: string,
  ) {
    super(reason);
  }
}

const STRING_FIELDS = ['name', 'agentId', 'sessionKey', 'channel', 'to', 'model', 'thinking'] as const;

/**
 * Merges a transform's result over the draft. Absent (`undefined` / `null`) fields keep the mapping's value; present
 * ones must have the right type, else the mapping fails (a bug in the transform, not the sender's fault). Unknown keys
 * are ignored. A `sessionKey` from a transform counts as external (`templated`) for the session-key policy.
 */
function applyOverride(d: Draft, o: Record<string, unknown>): Draft {
  // The same field rules as a direct request (hooks/normalize.ts); a violation is the transform's bug, not the sender's.
  const take = <T>(field: string, parse: () => T): T => {
    try {
      return parse();
    } catch (err) {
      if (err instanceof HttpError) throw new MappingFailure(`transform returned an invalid ${field}`, err.message);
      throw err;
    }
  };
  const present = (k: string) => o[k] !== undefined && o[k] !== null;
  const out: Draft = { ...d };
  if (present('kind')) {
    if (o.kind !== 'wake' && o.kind !== 'agent') {
      throw new MappingFailure('transform returned an invalid kind', `kind is ${describeKind(o.kind)}; expected "wake" or "agent"`);
    }
    out.kind = o.kind;
  }
  for (const k of ['text', 'message', ...STRING_FIELDS] as const) {
    if (present(k)) out[k] = take(k, () => optionalString(o, k));
  }
  if (present('sessionKey')) out.sessionKeySource = 'templated';
  for (const k of ['mode', 'wakeMode'] as const) {
    if (present(k)) out.wakeMode = take(k, () => parseWakeMode(o[k], k));
  }
  if (present('sessionMode')) out.sessionMode = take('sessionMode', () => sessionMode(o.sessionMode));
  for (const k of ['deliver', 'allowUnsafeExternalContent'] as const) {
    if (present(k)) out[k] = take(k, () => optionalBoolean(o, k))!;
  }
  if (present('timeoutSeconds')) out.timeoutSeconds = take('timeoutSeconds', () => timeoutSeconds(o.timeoutSeconds));
  return out;
}

async function runTransform(m: CompiledMapping, c: Compiled, input: TransformInput): Promise<Record<string, unknown> | null | undefined> {
  const t = m.transform!;
  if (t.unavailable !== undefined) throw new MappingFailure('transform module unavailable', t.unavailable);
  let fn: TransformFn;
  try {
    fn = await loadTransformOf(t, c.loader!);
  } catch (err) {
    throw new MappingFailure('transform module could not be loaded', firstLine(err));
  }
  let out: unknown;
  try {
    out = await fn(input);
  } catch (err) {
    const name = err instanceof Error ? err.name : typeof err;
    throw new MappingFailure('transform threw', `${name}: ${firstLine(err)}`);
  }
  if (out === null || out === undefined) return out;
  if (typeof out !== 'object' || Array.isArray(out)) {
    throw new MappingFailure(`transform returned ${describeKind(out)}`, 'expected an action object, or null to skip');
  }
  return out as Record<string, unknown>;
}

const LOG_UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g;

/** One log-safe line: control characters flattened, at most `max` characters. */
function logSafe(text: string, max = 200): string {
  const flat = text.replace(LOG_UNSAFE, ' ').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return logSafe(msg.split('\n')[0] ?? '');
}

function contentSourceOf(m: CompiledMapping, subPath: string, payload: Record<string, unknown>): ContentSource {
  if (m.preset === 'gmail' || subPath === 'gmail') return 'email';
  return Object.hasOwn(payload, 'source') && payload.source === 'gmail' ? 'email' : 'webhook';
}

/** Validates a finished draft and turns it into an action, with the same policy as a direct request. */
function finish(d: Draft, m: CompiledMapping, input: MappedRequest, contentSource: ContentSource): HookAction {
  if (d.kind === 'wake') {
    if (d.text === undefined) throw new HttpError(400, 'invalid_payload', 'hook mapping requires text');
    return { kind: 'wake', text: d.text, mode: d.wakeMode };
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

export interface MappedRoutesOptions {
  logger: Logger;
}

/**
 * The mapped-path resolver the ingress handler calls for every sub-path other than `wake` and `agent`.
 * One instance per process; it compiles each config generation once and disposes the previous generation's
 * transform loader when a new one appears.
 */
export function createMappedRoutes(opts: MappedRoutesOptions): MappedRoutes {
  const { logger } = opts;
  let current: Compiled | undefined;
  let previous: Compiled | undefined;

  const compiledFor = (ctx: HooksContext): Compiled => {
    if (current?.ctx === ctx) return current;
    if (previous?.ctx === ctx) return previous;
    const c = compileMappings(ctx);
    if (current === undefined || ctx.generation >= current.generation) {
      // The replaced generation stays usable for requests still in flight (their transforms are already loaded
      // and held); its loader is released now.
      if (current) void current.loader?.dispose();
      previous = current;
      current = c;
    } else if (c.loader) {
      // A request of a generation older than the two kept (it spanned two reloads): served, then released.
      setTimeout(() => void c.loader?.dispose(), 60_000).unref();
    }
    return c;
  };

  const fail = (input: MappedRequest, m: CompiledMapping, err: MappingFailure): HttpError => {
    logger.warn(
      { path: logSafe(input.subPath, 100), mappingId: m.id, reason: err.reason, detail: err.detail },
      `hook mapping failed: ${err.reason}`,
    );
    return mappingFailed(err.reason);
  };

  return {
    prepare(ctx) {
      compiledFor(ctx);
    },
    verifiesOwnSignature(ctx, subPath) {
      const c = compiledFor(ctx);
      return c.signedPaths.has(subPath) || (!c.byPath.has(subPath) && c.wildcardSigned);
    },

    bodyLimit(ctx, subPath) {
      return compiledFor(ctx).bodyLimits.get(subPath) ?? ctx.config.hooks.maxBodyBytes;
    },

    authenticatesRawBody(input) {
      const c = compiledFor(input.ctx);
      for (const m of candidates(c, input.subPath)) {
        if (m.signature && verifySignature(m.signature, { rawBody: input.rawBody, headers: input.headers }, input.now).ok) return true;
      }
      return false;
    },

    async resolve(input: MappedRequest): Promise<MappedResult> {
      const c = compiledFor(input.ctx);
      const m = matchMapping(c, input.subPath, input.payload);
      const tokenVerified = input.tokenVerified !== false;
      if (!m) return tokenVerified ? { kind: 'none' } : { kind: 'unauthorized', reason: 'missing or invalid hook token' };

      let deliveryId: string | undefined;
      if (m.signature) {
        const v = verifySignature(m.signature, { rawBody: input.rawBody, headers: input.headers, payload: input.payload }, input.now);
        if (!v.ok) return { kind: 'unauthorized', reason: `${m.signature.scheme} signature ${v.reason}`, signature: true };
        deliveryId = v.deliveryId;
      } else if (!tokenVerified) {
        return { kind: 'unauthorized', reason: 'missing or invalid hook token' };
      }

      let items: Array<Record<string, unknown>> = [input.payload];
      let dropped = 0;
      if (m.forEach !== undefined) {
        const fan = fanOutPayloads(input.payload, m.forEach, input.ctx.config.hooks.maxFanOut);
        if (fan.payloads.length === 0) return { kind: 'skip', mappingId: m.id };
        items = fan.payloads;
        dropped = fan.dropped;
        if (dropped > 0) {
          logger.warn(
            { path: logSafe(input.subPath, 100), mappingId: m.id, dispatched: items.length, dropped, maxFanOut: input.ctx.config.hooks.maxFanOut },
            `hook fan-out over "${m.forEach}" capped at ${items.length} items: dropped ${dropped}`,
          );
        }
      }

      const headers = headerRecord(input.headers);
      const query = queryRecord(input.query);
      const now = new Date(input.now);
      const contentSource = contentSourceOf(m, input.subPath, input.payload);
      const actions: HookAction[] = [];
      try {
        for (const payload of items) {
          const tctx: TemplateContext = { payload, headers, query, path: input.subPath, now };
          let draft = baseDraft(m, tctx);
          if (m.transform) {
            const out = await runTransform(m, c, { payload, headers, query, path: input.subPath });
            if (out === null) continue; // this item (or the whole request) is skipped
            if (out !== undefined) draft = applyOverride(draft, out);
          }
          actions.push(finish(draft, m, input, contentSource));
        }
      } catch (err) {
        if (err instanceof MappingFailure) throw fail(input, m, err);
        throw err;
      }
      if (actions.length === 0) return { kind: 'skip', mappingId: m.id };
      return {
        kind: 'actions',
        mappingId: m.id,
        actions,
        fanOut: m.forEach !== undefined,
        ...(deliveryId !== undefined ? { deliveryId } : {}),
        ...(dropped > 0 ? { dropped } : {}),
      };
    },
  };
}
