/**
 * The structure of src/, kept by a test so that it stays: which folder may import which, that
 * the CLI's store-reading commands do not load the server, and how long a file (and startApp) may grow.
 *
 * Imports are read from the source text (static `import … from` / `export … from` / `import '…'`, and dynamic
 * `import('…')` with a literal specifier) and relative ones resolved to files under src/. `import type` and
 * `export type` count for the folder rules (they are dependencies of the design) but not for what a process loads:
 * with `verbatimModuleSyntax`, only those are erased.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { ROOT } from './support/paths.js';

const SRC = join(ROOT, 'src');

/** A path relative to the repository, with forward slashes: `src/config/load.ts`. */
const rel = (file: string) => relative(ROOT, file).split('\\').join('/');

interface Import {
  /** The specifier as written. */
  spec: string;
  /** `src/…` for a relative specifier that resolves to a file under src/; undefined for builtins and packages. */
  target: string | undefined;
  kind: 'static' | 'type' | 'dynamic';
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir).sort()) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (/\.(m|c)?ts$/.test(e) && !e.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const FILES = walk(SRC).map(rel);
const TEXT = new Map(FILES.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));

function resolveSpec(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = resolve(ROOT, dirname(from), spec);
  const candidates = [
    base
      .replace(/\.js$/, '.ts')
      .replace(/\.mjs$/, '.mts')
      .replace(/\.cjs$/, '.cts'),
    base,
    `${base}.ts`,
    join(base, 'index.ts'),
  ];
  const hit = candidates.find((c) => existsSync(c) && statSync(c).isFile());
  return rel(hit ?? candidates[0]!);
}

/** Block comments and whole-line `//` comments out, so an example in a comment is not an import. */
const stripComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

function importsOf(file: string): Import[] {
  const text = stripComments(TEXT.get(file)!);
  const out: Import[] = [];
  const add = (spec: string, kind: Import['kind']) => out.push({ spec, target: resolveSpec(file, spec), kind });
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/gm))
    add(m[3]!, m[2] ? 'type' : 'static');
  for (const m of text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) add(m[1]!, 'static');
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) add(m[1]!, 'dynamic');
  return out;
}

/** The names an `import { … } from '<spec>'` of this file brings in ('' when there is none). */
function importClause(text: string, spec: string): string {
  const esc = spec.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return [...text.matchAll(new RegExp(`import\\s+([^'";]*?)\\s+from\\s*['"]${esc}['"]`, 'g'))]
    .map((m) => m[1])
    .join(' ');
}

const IMPORTS = new Map(FILES.map((f) => [f, importsOf(f)]));
const srcImports = (file: string) =>
  (IMPORTS.get(file) ?? []).filter((i): i is Import & { target: string } => i.target !== undefined);
const show = (lines: string[]) => lines.map((l) => `  ${l}`).join('\n');

/**
 * The leaves: single-file modules at the top of src/ (`src/*.ts`) whose own imports are only node builtins, npm
 * packages, or other leaves. Computed, not listed: the largest set of top-level files that import nothing else
 * from src/ (a top-level file that imports a folder, like app.ts or generation.ts, is not a leaf, nor is one that
 * imports such a file).
 */
function leaves(): Set<string> {
  const set = new Set(FILES.filter((f) => /^src\/[^/]+\.ts$/.test(f)));
  for (let changed = true; changed; ) {
    changed = false;
    for (const f of set) {
      if (srcImports(f).some((i) => !set.has(i.target))) {
        set.delete(f);
        changed = true;
      }
    }
  }
  return set;
}
const LEAVES = leaves();

/**
 * The layers, top first. A file may import from its own folder (or, at the top of src/, itself), from the layers
 * below its own, and from the leaves; never from a layer above, nor from another entry of its own layer (siblings
 * know nothing of each other). An entry is a folder (`src/hooks/`) or a top-level file that is not a leaf. cli/ sits
 * on top; it reaches app.ts only through the dynamic import checked below. docs/architecture.md draws this table.
 */
const LAYERS: ReadonlyArray<readonly string[]> = [
  ['src/cli/'],
  ['src/app.ts'],
  ['src/admin/', 'src/generation.ts'],
  ['src/ingress/', 'src/runtime/', 'src/gmail/'],
  ['src/hooks/', 'src/audit.ts'],
  ['src/store/', 'src/channels/', 'src/providers/', 'src/net/'],
  ['src/config/'],
  ['src/http/'],
];

/** The layer entry a file belongs to: its folder under src/, or itself for a top-level file. */
const entryOf = (file: string): string => /^src\/[^/]+\//.exec(file)?.[0] ?? file;
const LAYER_OF = new Map(LAYERS.flatMap((entries, i) => entries.map((e) => [e, LAYERS.length - i] as const)));

/**
 * Every file reachable from `entry` through imports of the given kinds, with the chain that first reached it; and,
 * with `follow`, through the dynamic imports it accepts too.
 */
function closure(
  entry: string,
  kinds: ReadonlyArray<Import['kind']>,
  follow: (i: Import & { target: string }) => boolean = () => false,
): Map<string, string[]> {
  const seen = new Map<string, string[]>([[entry, [entry]]]);
  const queue = [entry];
  while (queue.length) {
    const f = queue.shift()!;
    for (const i of srcImports(f)) {
      if (!(kinds.includes(i.kind) || (i.kind === 'dynamic' && follow(i))) || seen.has(i.target)) continue;
      seen.set(i.target, [...seen.get(f)!, i.target]);
      queue.push(i.target);
    }
  }
  return seen;
}

const MAX_FILE_LINES = 450;
const MAX_START_APP_LINES = 60;

describe('architecture', () => {
  it('the import reader sees the source: files, imports, leaves', () => {
    assert.ok(FILES.length > 50, `only ${FILES.length} source files found under ${SRC}`);
    assert.ok(FILES.includes('src/cli/main.ts') && FILES.includes('src/app.ts'));
    assert.ok(srcImports('src/app.ts').length > 5, 'app.ts imports from src/');
    for (const expected of ['src/errors.ts', 'src/log.ts', 'src/ids.ts', 'src/text-safe.ts', 'src/enums.ts']) {
      assert.ok(
        LEAVES.has(expected),
        `${expected} is a leaf (imports only builtins, packages and other leaves); leaves: ${[...LEAVES].join(', ')}`,
      );
    }
    assert.ok(
      !LEAVES.has('src/app.ts') && !LEAVES.has('src/generation.ts'),
      'app.ts and generation.ts import folders: not leaves',
    );
    for (const [file, imports] of IMPORTS) {
      for (const i of imports)
        if (i.target)
          assert.ok(
            TEXT.has(i.target),
            `${file} imports '${i.spec}', which resolves to no file under src/ (${i.target})`,
          );
    }
  });

  it('every folder under src/, and every top-level file that is not a leaf, has a layer', () => {
    const entries = [...new Set(FILES.filter((f) => !LEAVES.has(f)).map(entryOf))];
    const missing = entries.filter((e) => !LAYER_OF.has(e));
    assert.deepEqual(
      missing,
      [],
      `add these to LAYERS in test/architecture.test.ts (and to docs/architecture.md), at the layer their imports put them:\n${show(missing)}`,
    );
  });

  it('imports point down the layers: never up, never to a sibling', () => {
    const offending = FILES.filter((f) => !LEAVES.has(f)).flatMap((f) => {
      const from = entryOf(f);
      const level = LAYER_OF.get(from);
      if (level === undefined) return [];
      return srcImports(f)
        .filter(
          (i) => !LEAVES.has(i.target) && entryOf(i.target) !== from && (LAYER_OF.get(entryOf(i.target)) ?? 0) >= level,
        )
        .map((i) => `${f} imports ${i.target}${i.kind === 'type' ? ' (type only)' : ''}`);
    });
    assert.deepEqual(
      offending,
      [],
      `a file imports only from its own folder, lower layers and the leaves (move the shared part down, or pass it in):\n${show(offending)}`,
    );
  });

  it('src/config imports only from src/config and the leaf modules at the top of src/', () => {
    const offending = FILES.filter((f) => f.startsWith('src/config/')).flatMap((f) =>
      srcImports(f)
        .filter((i) => !i.target.startsWith('src/config/') && !LEAVES.has(i.target))
        .map((i) => `${f} imports ${i.target}${i.kind === 'type' ? ' (type only)' : ''}`),
    );
    assert.deepEqual(
      offending,
      [],
      `config must not depend on the other folders (move what it needs into src/config or a leaf; leaves: ${[...LEAVES].join(', ')}):\n${show(offending)}`,
    );
  });

  it('nothing under src/hooks imports from src/ingress', () => {
    const offending = FILES.filter((f) => f.startsWith('src/hooks/')).flatMap((f) =>
      srcImports(f)
        .filter((i) => i.target.startsWith('src/ingress/'))
        .map((i) => `${f} imports ${i.target}${i.kind === 'type' ? ' (type only)' : ''}`),
    );
    assert.deepEqual(
      offending,
      [],
      `hooks sit below ingress: what hooks needs from ingress belongs in hooks (or a leaf):\n${show(offending)}`,
    );
  });

  it('src/net (what both listeners share) imports only from src/net and the leaf modules', () => {
    const offending = FILES.filter((f) => f.startsWith('src/net/')).flatMap((f) =>
      srcImports(f)
        .filter((i) => !i.target.startsWith('src/net/') && !LEAVES.has(i.target))
        .map((i) => `${f} imports ${i.target}${i.kind === 'type' ? ' (type only)' : ''}`),
    );
    assert.deepEqual(
      offending,
      [],
      `net sits below ingress and admin, which both import it; it must not import them (nor config, nor store):\n${show(offending)}`,
    );
  });

  it('src/http (the outbound client) imports only from src/http and the leaf modules', () => {
    const offending = FILES.filter((f) => f.startsWith('src/http/')).flatMap((f) =>
      srcImports(f)
        .filter((i) => !i.target.startsWith('src/http/') && !LEAVES.has(i.target))
        .map((i) => `${f} imports ${i.target}${i.kind === 'type' ? ' (type only)' : ''}`),
    );
    assert.deepEqual(
      offending,
      [],
      `http sits at the level of the leaves, below channels, providers, gmail and cli, which import it:\n${show(offending)}`,
    );
  });

  it('outbound HTTP goes through src/http only: no fetch, undici, http.request or https.request elsewhere', () => {
    const calls: Array<[RegExp, string]> = [
      [/(?<![\w$.])fetch\s*\(/, 'calls fetch('],
      [/\bglobalThis\.fetch\b/, 'uses globalThis.fetch'],
      [/\bundici\s*\.\s*(request|fetch|stream|pipeline|Agent|Pool|Client)\b/, 'uses undici directly'],
      [/\bhttps?\s*\.\s*(request|get)\s*\(/, 'calls http(s).request / http(s).get'],
    ];
    const offending = FILES.filter((f) => !f.startsWith('src/http/')).flatMap((f) => {
      const text = stripComments(TEXT.get(f)!);
      const found = calls.filter(([re]) => re.test(text)).map(([, what]) => `${f} ${what}`);
      const imports = (IMPORTS.get(f) ?? [])
        .filter(
          (i) =>
            i.spec === 'undici' ||
            i.spec.startsWith('undici/') ||
            ((i.spec === 'node:http' || i.spec === 'node:https' || i.spec === 'http' || i.spec === 'https') &&
              /\b(request|get)\b/.test(importClause(text, i.spec))),
        )
        .map((i) => `${f} imports ${i.spec}${i.spec.includes('undici') ? '' : ' (request/get)'}`);
      return [...found, ...imports];
    });
    assert.deepEqual(
      offending,
      [],
      `call other services through src/http (request, and agent() for a dispatcher of one's own): timeouts, the size cap, redirects and errors are handled there once:\n${show(offending)}`,
    );
  });

  it('the CLI loads the server only for serve, through a dynamic import of app.ts', () => {
    const entry = 'src/cli/main.ts';
    // The command modules are loaded on demand (program.ts): each command's own chain counts as loaded.
    const loaded = closure(entry, ['static'], (i) => i.target.startsWith('src/cli/'));
    const forbidden = (f: string) => f === 'src/app.ts' || f.startsWith('src/ingress/') || f.startsWith('src/runtime/');
    const offending = [...loaded].filter(([f]) => forbidden(f)).map(([, chain]) => chain.join(' → '));
    assert.deepEqual(
      offending,
      [],
      `the store-reading commands must not load app.ts, src/ingress or src/runtime; these static import chains from ${entry} do:\n${show(offending)}`,
    );

    const dynamic = [...loaded.keys()].flatMap((f) =>
      srcImports(f)
        .filter((i) => i.kind === 'dynamic' && i.target === 'src/app.ts')
        .map(() => f),
    );
    assert.ok(
      dynamic.length > 0,
      `serve must load the server with a dynamic import('…/app.js') from the CLI (in serve-command.ts: \`const { startApp } = await import('../app.js')\`); none found in: ${[...loaded.keys()].filter((f) => f.startsWith('src/cli/')).join(', ')}`,
    );
  });

  it(`no source file under src/ is over ${MAX_FILE_LINES} lines`, () => {
    const lines = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    const offending = FILES.map((f) => ({ f, n: lines(TEXT.get(f)!) }))
      .filter(({ n }) => n > MAX_FILE_LINES)
      .sort((a, b) => b.n - a.n)
      .map(({ f, n }) => `${f}: ${n} lines`);
    assert.deepEqual(offending, [], `split these files (at most ${MAX_FILE_LINES} lines each):\n${show(offending)}`);
  });

  it(`startApp in src/app.ts is at most ${MAX_START_APP_LINES} lines`, () => {
    const file = 'src/app.ts';
    const source = ts.createSourceFile(file, TEXT.get(file)!, ts.ScriptTarget.Latest, true);
    const fn = source.statements.find(
      (s): s is ts.FunctionDeclaration => ts.isFunctionDeclaration(s) && s.name?.text === 'startApp',
    );
    assert.ok(fn, `no function declaration startApp in ${file}`);
    const first = source.getLineAndCharacterOfPosition(fn.getStart(source)).line + 1;
    const last = source.getLineAndCharacterOfPosition(fn.getEnd()).line + 1;
    const n = last - first + 1;
    assert.ok(
      n <= MAX_START_APP_LINES,
      `startApp (${file}:${first}-${last}) is ${n} lines; at most ${MAX_START_APP_LINES}: move what it builds into functions of its own`,
    );
  });
});
