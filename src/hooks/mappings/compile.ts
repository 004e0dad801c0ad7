/**
 * The compiled form of a config generation's mappings (`hooks.mappings`, in order, then the presets), built once per
 * generation: templates parsed, transform modules resolved and imported through one `TransformLoader`, candidate
 * lists per `match.path`, the signature-authenticated paths and the per-path body limits precomputed.
 */
import { resolveTransformModule, resolveTransformsDir } from '../../config/paths.js';
import type { MappingConfig, SignatureConfig } from '../../config/schema/hooks.js';
import { isTemplated } from '../../config/template-syntax.js';
import { ConfigError } from '../../errors.js';
import type { SessionMode, WakeMode } from '../../store/types.js';
import { errorMessage } from '../../text-safe.js';
import type { Config } from '../../config/load.js';
import type { SessionKeySource } from '../policy.js';
import type { SenderName } from '../../config/schema/hooks.js';
import { type PresetMapping, type PresetName, presetBodyLimits, presetMappings } from './presets/index.js';
import { compileSender, type EventMatch } from './presets/sender.js';
import { type CompiledTemplate, compileTemplate } from './templates.js';
import { type TransformFn, TransformLoader } from './transforms.js';

export interface CompiledTransform {
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
  /** The preset that made it: `gmail` or a sender preset's name; undefined for `hooks.mappings`. */
  readonly preset: PresetName | SenderName | undefined;
  readonly path: string | undefined;
  readonly source: string | undefined;
  /** `match.headers` as [lower-case name, exact value] pairs; undefined when the mapping does not match on headers. */
  readonly headers: ReadonlyArray<readonly [string, string]> | undefined;
  /** A sender preset's event types: a delivery of another type does not match. Undefined for other mappings. */
  readonly events: EventMatch | undefined;
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
    readonly accountId: CompiledTemplate | undefined;
    readonly model: CompiledTemplate | undefined;
    readonly thinking: CompiledTemplate | undefined;
  };
  readonly transform: CompiledTransform | undefined;
}

export interface Compiled {
  readonly mappings: readonly CompiledMapping[];
  /** Candidates (in order) for each explicit `match.path`; other paths use `wildcard`. */
  readonly byPath: ReadonlyMap<string, readonly CompiledMapping[]>;
  /** Mappings without `match.path` (they match every mapped sub-path). */
  readonly wildcard: readonly CompiledMapping[];
  /** Sub-paths whose candidates include a signature mapping; `wildcardSigned` covers every other path. */
  readonly signedPaths: ReadonlySet<string>;
  readonly wildcardSigned: boolean;
  /** Per-path body limits above `hooks.maxBodyBytes` (a preset's path, e.g. gmail's). */
  readonly bodyLimits: ReadonlyMap<string, number>;
  readonly loader: TransformLoader | undefined;
}

function configErrorText(err: unknown): string {
  if (err instanceof ConfigError) return err.issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  return errorMessage(err);
}

const optionalTemplate = (s: string | undefined): CompiledTemplate | undefined =>
  s === undefined ? undefined : compileTemplate(s);

function compileMapping(
  m: MappingConfig,
  index: number | undefined,
  preset: PresetMapping | undefined,
  transforms: { dir: string | undefined; dirError: string | undefined; loader: TransformLoader | undefined },
): CompiledMapping {
  const sender = preset?.sender && compileSender(preset.sender.preset, preset.sender.entry);
  // A preset's key is hookgate's own template with a fixed namespace (`hook:gmail:{{…}}`, `hook:github:…`): the
  // payload picks only the part inside it, so it is treated like a static key (no allowRequestSessionKey opt-in;
  // prefixes still apply). OpenClaw required the opt-in here and every Gmail push got 400 until users opened it for
  // all callers. The gmail mapping's `sessionKey` is such a key; a sender preset's is the user's own, like a mapping's
  // (its own key is `sender.sessionKey`, static by construction).
  const presetsOwnKey = preset !== undefined && preset.sender === undefined;
  let transform: CompiledTransform | undefined;
  if (m.transform) {
    const keyPath =
      index === undefined
        ? `hooks.presets.${preset?.name}.transform.module`
        : `hooks.mappings[${index}].transform.module`;
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
    id: m.id ?? (index === undefined ? (preset?.name ?? 'preset') : `mapping-${index + 1}`),
    index,
    preset: preset?.name,
    path: m.match?.path,
    source: m.match?.source,
    headers: m.match?.headers && Object.keys(m.match.headers).length > 0 ? Object.entries(m.match.headers) : undefined,
    events: sender?.events,
    action: m.action,
    wakeMode: m.wakeMode,
    sessionMode: m.sessionMode ?? 'isolated',
    deliver: m.deliver,
    allowUnsafeExternalContent: m.allowUnsafeExternalContent,
    agentId: m.agentId,
    timeoutSeconds: m.timeoutSeconds,
    forEach: m.forEach,
    signature: m.signature,
    sessionKeySource:
      m.sessionKey !== undefined && isTemplated(m.sessionKey) && !presetsOwnKey ? 'templated' : 'static',
    templates: {
      text: sender?.message ?? optionalTemplate(m.textTemplate),
      message: sender?.message ?? optionalTemplate(m.messageTemplate),
      name: optionalTemplate(m.name),
      sessionKey: sender?.sessionKey ?? optionalTemplate(m.sessionKey),
      channel: optionalTemplate(m.channel),
      to: sender?.to ?? optionalTemplate(m.to),
      accountId: optionalTemplate(m.accountId),
      model: optionalTemplate(m.model),
      thinking: optionalTemplate(m.thinking),
    },
    transform,
  };
}

/** Compiles the mappings of one config generation (custom first, then presets). Synchronous; starts transform imports. */
export function compileMappings(config: Config): Compiled {
  const hooks = config.hooks;
  const needsTransforms = hooks.mappings.some((m) => m.transform);
  let dir: string | undefined;
  let dirError: string | undefined;
  let loader: TransformLoader | undefined;
  if (needsTransforms) {
    try {
      dir = resolveTransformsDir(config.dir, hooks.transformsDir);
      loader = new TransformLoader({ root: dir });
    } catch (err) {
      dirError = configErrorText(err);
    }
  }
  const t = { dir, dirError, loader };
  const mappings: CompiledMapping[] = hooks.mappings.map((m, i) => compileMapping(m, i, undefined, t));
  for (const p of presetMappings(hooks)) mappings.push(compileMapping(p.mapping, undefined, p, t));

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

  // Import every transform now: the first request does not pay for it, and the functions are held by the
  // compiled mappings, so they keep working after this generation's loader is disposed.
  if (loader) for (const m of mappings) if (m.transform?.file) loadTransformOf(m.transform, loader);

  return {
    mappings,
    byPath,
    wildcard,
    signedPaths,
    wildcardSigned: wildcard.some((m) => m.signature),
    bodyLimits: presetBodyLimits(hooks),
    loader,
  };
}

export function loadTransformOf(t: CompiledTransform, loader: TransformLoader): Promise<TransformFn> {
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
export function candidates(c: Compiled, subPath: string): readonly CompiledMapping[] {
  return c.byPath.get(subPath) ?? c.wildcard;
}

/**
 * First match wins: `match.path` (already filtered), `match.source` equal to the payload's string `source`, every
 * `match.headers` entry present with exactly that value, and a sender preset's event type among those it takes.
 * `headers` are the request's headers as templates see them (lower-cased names, repeats joined with ", ", credential
 * headers removed).
 */
export function matchMapping(
  c: Compiled,
  subPath: string,
  payload: Record<string, unknown>,
  headers: Readonly<Record<string, string>>,
): CompiledMapping | undefined {
  const list = candidates(c, subPath);
  if (list.length === 0) return undefined;
  const src = Object.hasOwn(payload, 'source') ? payload.source : undefined;
  for (const m of list) {
    if (m.source !== undefined && m.source !== src) continue;
    if (m.headers !== undefined && !headersMatch(m.headers, headers)) continue;
    if (m.events !== undefined && !m.events.takes(m.events.of(payload, headers))) continue;
    return m;
  }
  return undefined;
}

export function headersMatch(
  want: ReadonlyArray<readonly [string, string]>,
  headers: Readonly<Record<string, string>>,
): boolean {
  for (const [name, value] of want) {
    if (!Object.hasOwn(headers, name) || headers[name]!.trim() !== value) return false;
  }
  return true;
}

/**
 * Whether `subPath` is signature-capable: some mapping that could match it by path has a `signature`. Such a path
 * reads its body before authentication, and the mapping that matches decides how it is authenticated.
 */
export function isSignaturePath(c: Compiled, subPath: string): boolean {
  return c.signedPaths.has(subPath) || (!c.byPath.has(subPath) && c.wildcardSigned);
}
