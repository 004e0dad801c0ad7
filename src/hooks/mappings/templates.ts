/**
 * `{{ expr }}` templates of mapped hooks (session keys, messages, names, ...).
 *
 * Deliberately tiny: an expression is a *path*, never code. There is no evaluation, no helpers, no filters, so a
 * hostile payload or template can at worst produce an empty string. Lookups only ever read own properties and never
 * walk through `__proto__` / `prototype` / `constructor`, so nothing from Object.prototype (or any other prototype)
 * can leak into a rendered string.
 *
 * Templates are parsed once (`compileTemplate`) and rendered many times: mappings compile theirs once per config
 * generation, and a fan-out renders the same template for every item. The expression syntax itself (and
 * `isTemplated`) lives in config/template-syntax.ts, which the config checks use too.
 */
import { TEMPLATE_EXPRESSION } from '../../config/template-syntax.js';

export interface TemplateContext {
  /** The parsed request body (or, during fan-out, the payload with the array narrowed to the current item). */
  payload: unknown;
  /** Request headers with lower-cased names; repeated headers already joined with `", "`. */
  headers: Record<string, string>;
  /** URL query parameters. */
  query: Record<string, string>;
  /** The hook sub-path, e.g. `gmail` for `/hooks/gmail`. */
  path: string;
  /** Render time; `{{now}}` renders it as ISO-8601. */
  now: Date;
}

export type CompiledTemplate = (ctx: TemplateContext) => string;

/** Keys that would reach a prototype (or a constructor, and from there `Function`): never resolved. */
const BLOCKED_SEGMENTS: ReadonlySet<string> = new Set(['__proto__', 'prototype', 'constructor']);

type Segment = { kind: 'key'; key: string } | { kind: 'index'; index: number };

/**
 * Parses `a.b[2][0].c` into segments. Returns undefined for anything that is not a well-formed path (empty segments,
 * unbalanced or non-numeric brackets, blocked keys): such a path simply never resolves.
 */
function parsePath(path: string): Segment[] | undefined {
  const p = path.trim();
  if (p === '') return undefined;
  const out: Segment[] = [];
  for (const part of p.split('.')) {
    // `name`, `name[0]`, `name[0][1]`, or `[0]` (a leading index, e.g. `[0].id` on an array payload).
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m) return undefined;
    const key = m[1] ?? '';
    const indexes = m[2] ?? '';
    if (key === '' && indexes === '') return undefined; // `a..b`, trailing dot
    if (key !== '') {
      if (BLOCKED_SEGMENTS.has(key)) return undefined;
      out.push({ kind: 'key', key });
    }
    for (const im of indexes.matchAll(/\[(\d+)\]/g)) {
      const index = Number(im[1]);
      if (!Number.isSafeInteger(index)) return undefined;
      out.push({ kind: 'index', index });
    }
  }
  return out;
}

function walk(root: unknown, segments: readonly Segment[]): unknown {
  let cur: unknown = root;
  for (const seg of segments) {
    if (seg.kind === 'index') {
      // `[n]` only indexes real arrays; own-property check skips holes of sparse arrays.
      if (!Array.isArray(cur) || seg.index >= cur.length || !Object.hasOwn(cur, seg.index)) return undefined;
      cur = cur[seg.index];
    } else {
      // Descending into a primitive (string, number, ...) is "missing", not `'abc'.length`.
      if (cur === null || (typeof cur !== 'object' && typeof cur !== 'function')) return undefined;
      if (!Object.hasOwn(cur, seg.key)) return undefined;
      cur = (cur as Record<string, unknown>)[seg.key];
    }
  }
  return cur;
}

/**
 * Reads `path` (dot segments and `[n]` indexes) from `root`. Returns undefined when any step is missing, when a
 * step would leave own properties, or when the path is malformed. (Fan-out and `match.source` read top-level keys with `Object.hasOwn`.)
 */
export function lookupPath(root: unknown, path: string): unknown {
  const segments = parsePath(path);
  return segments ? walk(root, segments) : undefined;
}

/** Rendering rule: missing/null → '', strings as-is, numbers/booleans/bigints stringified, objects → JSON. */
function stringifyValue(v: unknown): string {
  if (v === undefined || v === null) return '';
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(v);
    case 'object':
      try {
        // JSON.stringify throws on cycles / BigInt members; a template must never throw, so those render empty.
        return JSON.stringify(v) ?? '';
      } catch {
        return '';
      }
    default:
      // functions and symbols: not data
      return '';
  }
}

function ownString(record: Record<string, string> | undefined, name: string): unknown {
  if (record === null || typeof record !== 'object') return undefined;
  if (name === '' || BLOCKED_SEGMENTS.has(name) || !Object.hasOwn(record, name)) return undefined;
  return record[name];
}

type Getter = (ctx: TemplateContext) => unknown;

function compileExpr(raw: string): Getter {
  const expr = raw.trim();
  if (expr === '') return () => undefined;
  if (expr === 'path') return (ctx) => ctx.path;
  if (expr === 'now')
    return (ctx) => {
      const t = ctx.now instanceof Date ? ctx.now.getTime() : NaN;
      return Number.isFinite(t) ? new Date(t).toISOString() : undefined;
    };
  if (expr.startsWith('headers.')) {
    // Header names are case-insensitive; the context carries them lower-cased. The rest is one name (no path).
    const name = expr.slice('headers.'.length).trim().toLowerCase();
    return (ctx) => ownString(ctx.headers, name);
  }
  if (expr.startsWith('query.')) {
    const name = expr.slice('query.'.length).trim();
    return (ctx) => ownString(ctx.query, name);
  }
  const path = expr.startsWith('payload.') ? expr.slice('payload.'.length) : expr;
  const segments = parsePath(path);
  if (!segments) return () => undefined;
  return (ctx) => walk(ctx.payload, segments);
}

/**
 * Parses `template` once; the returned function renders it against a context and never throws. With `complete`, a
 * template any of whose expressions renders blank renders '' as a whole: a key made of parts (a sender preset's
 * `acme/app#42`) is either whole or missing, never `acme/app#`.
 */
export function compileTemplate(template: string, opts: { complete?: boolean } = {}): CompiledTemplate {
  const complete = opts.complete === true;
  const literals: string[] = [];
  const getters: Getter[] = [];
  let last = 0;
  for (const m of template.matchAll(TEMPLATE_EXPRESSION)) {
    literals.push(template.slice(last, m.index));
    getters.push(compileExpr(m[1] ?? ''));
    last = m.index + m[0].length;
  }
  const tail = template.slice(last);
  if (getters.length === 0) return () => template;
  return (ctx) => {
    let out = '';
    for (let i = 0; i < getters.length; i++) {
      out += literals[i] ?? '';
      let value: unknown;
      try {
        value = (getters[i] as Getter)(ctx);
      } catch {
        // Only reachable with exotic inputs (a Proxy payload, a throwing getter): render as missing.
        value = undefined;
      }
      const part = stringifyValue(value);
      if (complete && part.trim() === '') return '';
      out += part;
    }
    return out + tail;
  };
}

/** One-shot render; prefer `compileTemplate` for templates rendered more than once. */
export function renderTemplate(template: string, ctx: TemplateContext): string {
  return compileTemplate(template)(ctx);
}
