/**
 * Transform modules of mapped hooks: operator-written code that turns a request into (part of) an action.
 *
 * Transforms are TRUSTED code. They run in the service's own process with its full privileges; nothing here is a
 * sandbox. What this module does guarantee is that only files the operator deliberately placed under
 * `<configDir>/hooks/transforms` can be loaded: module paths are validated lexically (no absolute paths, `~`, `:`,
 * `..`) and again after resolving symlinks (config/paths.ts), so neither a config value nor a symlink can point the
 * loader at an arbitrary file elsewhere on disk (e.g. something an attacker managed to write to /tmp).
 *
 * Loading is per config generation: a `TransformLoader` caches each `file::export` once, and a new loader (after a
 * config reload) imports the files afresh. ESM caches modules by URL for the life of the process, so fresh imports
 * use a URL no earlier generation used (`?gen=<n>` for JS, a per-loader tsx namespace for TypeScript).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { isInside, realpathOfNearest } from '../../config/paths.js';
import { HookgateError, type TransformErrorCode as TransformErrorCodeAll } from '../../errors.js';
import { describeKind, firstLine } from '../../text-safe.js';

/** What a transform is called with. */
export interface TransformInput {
  payload: unknown;
  headers: Record<string, string>;
  /** The query parameters (first value of each name). */
  query: Record<string, string>;
  /**
   * The request's URL (`http://localhost{hooks.path}/{path}?{query}`), as OpenClaw passes it: transforms written
   * for OpenClaw read `url.searchParams`. A fresh object per call; the host is not the request's `Host` header.
   */
  url: URL;
  /** The sub-path after `hooks.path`, without slashes at either end. */
  path: string;
}

/**
 * A deep copy of a JSON-shaped payload without the keys that can reach a prototype: every `__proto__` key, and every
 * `constructor` key whose value has a `prototype` key (secure-json-parse's `protoAction`/`constructorAction:
 * 'remove'`, which the tests use as the reference). JSON.parse makes `"__proto__"` an own property, so a transform
 * doing `Object.assign({}, payload.extra)` would otherwise take the sender's prototype.
 *
 * Why a copy here rather than a second parse of the raw body with secure-json-parse: the ingress's parser is shared
 * by every route, transforms also see form payloads and `forEach` items (not the raw body), and the copy costs less
 * than a second parse. The copy also keeps a transform that mutates its input from changing the payload the rest of
 * the request uses.
 */
export function withoutPrototypeKeys(value: unknown): unknown {
  // Iterative: a body of 256 KB can nest ~128k levels deep, which JSON.parse accepts and a recursion would not.
  type Node = Record<string, unknown> | unknown[];
  const stack: Array<[Node, Node]> = [];
  const copyOf = (v: unknown): unknown => {
    if (v === null || typeof v !== 'object') return v;
    const dst: Node = Array.isArray(v) ? new Array<unknown>(v.length) : {};
    stack.push([v as Node, dst]);
    return dst;
  };
  const root = copyOf(value);
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [src, dst] = top;
    if (Array.isArray(src)) {
      for (let i = 0; i < src.length; i++) (dst as unknown[])[i] = copyOf(src[i]);
      continue;
    }
    for (const key of Object.keys(src)) {
      if (key === '__proto__') continue;
      const v = src[key];
      if (key === 'constructor' && v !== null && typeof v === 'object' && Object.hasOwn(v, 'prototype')) continue;
      (dst as Record<string, unknown>)[key] = copyOf(v);
    }
  }
  return root;
}

/** Returns a partial action, or `null` to skip the delivery (→ 204). May be async. */
export type TransformFn = (input: TransformInput) => unknown | Promise<unknown>;

const TS_EXTENSIONS: ReadonlySet<string> = new Set(['.ts', '.mts']);

export type TransformErrorCode = Exclude<TransformErrorCodeAll, 'transform_loader_disposed'>;

/** A transform module could not be imported, or does not export a usable function. */
export class TransformError extends HookgateError {
  declare readonly code: TransformErrorCode;
  readonly file: string;
  readonly exportName: string | undefined;
  constructor(
    code: TransformErrorCode,
    message: string,
    file: string,
    exportName?: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.file = file;
    this.exportName = exportName;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------------------------

type ModuleNamespace = Record<string, unknown>;

interface TsImporter {
  import(specifier: string): Promise<ModuleNamespace>;
  unregister(): Promise<void>;
}

/**
 * Registers tsx's ESM and CJS hooks under a private namespace. Modules imported through a namespace get a URL of
 * their own (`?namespace=…`, also on their relative imports), which is what lets the next generation re-import them.
 * The CJS half is needed for `.ts` files outside a `"type": "module"` package, which tsx compiles to CommonJS.
 */
async function registerTsNamespace(namespace: string): Promise<TsImporter> {
  const [esmApi, cjsApi] = await Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]);
  const cjs = cjsApi.register({ namespace });
  const esm = esmApi.register({ namespace });
  return {
    import: async (specifier) => (await esm.import(specifier, import.meta.url)) as ModuleNamespace,
    unregister: async () => {
      cjs.unregister();
      await esm.unregister();
    },
  };
}

const requireCache = createRequire(import.meta.url).cache;

/**
 * CommonJS modules (`.cjs`, `.js` outside a `"type": "module"` package, `.ts` compiled to CJS) are cached by file path
 * in `require.cache`, and the ESM loader reuses that cache even under a new `?gen=` URL. Dropping the entries below
 * `root` lets the next generation load fresh copies; modules already loaded keep working (they are only unlisted).
 */
function evictRequireCache(root: string): void {
  for (const key of Object.keys(requireCache)) {
    const file = key.split('?')[0] ?? key;
    if (path.isAbsolute(file) && isInside(root, file)) delete requireCache[key];
  }
}

async function importModule(file: string, generation: number | undefined, ts: (() => Promise<TsImporter>) | undefined) {
  const url = pathToFileURL(file);
  if (TS_EXTENSIONS.has(path.extname(file))) {
    if (ts) return (await ts()).import(url.href);
    // One-off import: tsImport registers a throwaway namespace per call, so it never returns a cached module.
    const { tsImport } = await import('tsx/esm/api');
    return (await tsImport(url.href, import.meta.url)) as ModuleNamespace;
  }
  if (generation !== undefined) url.searchParams.set('gen', String(generation));
  return (await import(url.href)) as ModuleNamespace;
}

/**
 * TypeScript compiled to CommonJS shows up as `{ default: { __esModule: true, default, transform, … } }`; CommonJS
 * `module.exports = { transform }` shows up as `{ default: { transform } }`. Look through both wrappers.
 */
function exportOf(ns: ModuleNamespace, name: string): unknown {
  let src: ModuleNamespace = ns;
  const wrapped = ns.default;
  if (wrapped !== null && typeof wrapped === 'object' && (wrapped as { __esModule?: unknown }).__esModule === true)
    src = wrapped as ModuleNamespace;
  if (Object.hasOwn(src, name)) return src[name];
  const cjs = src.default;
  if (name !== 'default' && cjs !== null && typeof cjs === 'object' && Object.hasOwn(cjs, name))
    return (cjs as ModuleNamespace)[name];
  return undefined;
}

/** Picks the transform function: `exportName` if given (must be a function), else `default`, else `transform`. */
function pickExport(ns: ModuleNamespace, file: string, exportName: string | undefined): TransformFn {
  if (exportName !== undefined) {
    const v = exportOf(ns, exportName);
    if (v === undefined)
      throw new TransformError(
        'transform_invalid',
        `transform module ${file} has no export "${exportName}"`,
        file,
        exportName,
      );
    if (typeof v !== 'function')
      throw new TransformError(
        'transform_invalid',
        `export "${exportName}" of transform module ${file} is ${describeKind(v)}, not a function`,
        file,
        exportName,
      );
    return v as TransformFn;
  }
  const d = exportOf(ns, 'default');
  if (typeof d === 'function') return d as TransformFn;
  const t = exportOf(ns, 'transform');
  if (typeof t === 'function') return t as TransformFn;
  throw new TransformError(
    'transform_invalid',
    `transform module ${file} exports neither a default function nor a "transform" function` +
      (d !== undefined ? ` (default is ${describeKind(d)})` : '') +
      (t !== undefined ? ` (transform is ${describeKind(t)})` : ''),
    file,
  );
}

async function load(
  file: string,
  exportName: string | undefined,
  generation: number | undefined,
  ts: (() => Promise<TsImporter>) | undefined,
): Promise<TransformFn> {
  let ns: ModuleNamespace;
  try {
    ns = await importModule(file, generation, ts);
  } catch (err) {
    // The module's own error (syntax error, a throw at top level, a missing dependency). Its first line is shown
    // because this is operator code failing at config time; the full error stays available as `cause`.
    throw new TransformError(
      'transform_load_failed',
      `cannot load transform module ${file}: ${firstLine(err)}`,
      file,
      exportName,
      {
        cause: err,
      },
    );
  }
  return pickExport(ns, file, exportName);
}

/**
 * One-off load of a transform (no cache of ours; Node's ESM cache still applies to JS files imported this way).
 * Use a `TransformLoader` in the service: it caches per generation and reloads on the next one.
 */
export function loadTransform(file: string, exportName?: string): Promise<TransformFn> {
  return load(file, exportName, undefined, undefined);
}

/** Process-wide, so two loaders can never share an import URL (and so never share a cached module). */
let lastGeneration = 0;

/**
 * Loads and caches transforms for one config generation. Create a new loader when the config is reloaded; call
 * `dispose()` on the old one once nothing uses its transforms any more (it unregisters the generation's tsx hooks).
 */
export class TransformLoader {
  /** Unique in this process; part of every import URL of this loader. */
  readonly generation: number;
  private readonly root: string | undefined;
  private readonly cache = new Map<string, Promise<TransformFn>>();
  private ts: Promise<TsImporter> | undefined;
  private evicted = new Set<string>();
  private disposed = false;

  /** `root`: the transforms directory; stale CommonJS copies below it are dropped before this generation loads. */
  constructor(options: { root?: string } = {}) {
    this.generation = ++lastGeneration;
    this.root =
      options.root === undefined ? undefined : (realpathOfNearest(options.root) ?? path.resolve(options.root));
  }

  /** The transform in `file` (a path from `resolveTransformModule`), imported at most once per loader. */
  load(file: string, exportName?: string): Promise<TransformFn> {
    if (this.disposed)
      return Promise.reject(new HookgateError('transform_loader_disposed', 'transform loader was disposed'));
    const key = `${file}::${exportName ?? ''}`;
    let hit = this.cache.get(key);
    if (!hit) {
      const scope = this.root ?? path.dirname(file);
      if (!this.evicted.has(scope)) {
        this.evicted.add(scope);
        evictRequireCache(scope);
      }
      hit = load(file, exportName, this.generation, () => this.tsImporter());
      // Failures are not cached: a later call retries (and reports the current error) instead of replaying one.
      hit.catch(() => this.cache.delete(key));
      this.cache.set(key, hit);
    }
    return hit;
  }

  /** Number of cached `file::export` entries (loaded or loading). */
  get size(): number {
    return this.cache.size;
  }

  /** Forgets the cache and unregisters this generation's TypeScript hooks. Loaded functions keep working. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.cache.clear();
    const ts = this.ts;
    this.ts = undefined;
    if (ts) await (await ts.catch(() => undefined))?.unregister();
  }

  private tsImporter(): Promise<TsImporter> {
    this.ts ??= registerTsNamespace(`hookgate-transforms-${this.generation}`);
    return this.ts;
  }
}
