/**
 * The repository explains itself. Code, tests and docs state a rule in their own words or cite the project's
 * docs (docs/reference.md and its siblings); they never point at a document outside the tree, nor give a work
 * item's number as the reason for something. This test reads the files and names each offending file:line.
 *
 * It also checks the links into the docs: every `docs/<file>.md#<anchor>` written in source, tests or scripts, and
 * every relative Markdown link in the docs and the README, must name a file that exists and, when it has one, a
 * heading (or an explicit `id`) of that file.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fromRoot } from './support/paths.js';

const ROOT = fromRoot('.');

/** A path relative to the repository, with forward slashes. */
const rel = (file: string) => relative(ROOT, file).split('\\').join('/');

/** What is read: the project's own text. */
const TREES = ['src', 'test', 'docs', 'bench', 'scripts', 'examples', 'dashboard'];
const FILES_AT_ROOT = ['README.md', 'CHANGELOG.md'];
const TEXT = /\.(m|c)?(ts|js)$|\.(md|json5?|lua|html|css|sh|service|txt|ya?ml|sql)$/;

/**
 * Not read: this file (it spells the patterns) and the senders' example payloads, which are third-party data
 * (a GitHub issue's title may well say "issue 1"). The fixtures' README files are ours and are read.
 */
const SKIP = [/^test\/repo-references\.test\.ts$/, /^test\/fixtures\/.*\.json$/];

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir).sort()) {
    if (e === 'node_modules' || e.startsWith('.')) continue;
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else if (TEXT.test(e)) out.push(p);
  }
  return out;
}

const FILES = [
  ...TREES.flatMap((t) => walk(join(ROOT, t))),
  ...FILES_AT_ROOT.map((f) => join(ROOT, f)).filter((f) => existsSync(f)),
]
  .map(rel)
  .filter((f) => !SKIP.some((s) => s.test(f)));

/** What must not be written, each with why. */
const FORBIDDEN: Array<{ pattern: RegExp; why: string }> = [
  { pattern: /\bCONTRACT\b/, why: 'a document outside the repository: cite docs/reference.md or state the rule' },
  { pattern: /§/, why: 'a numbered section reference: link the heading (docs/x.md#anchor) or name it' },
  { pattern: /\b(issue|session|round)\s+\d+/i, why: "a work item as a reason: say why in the project's words" },
];

interface Hit {
  at: string;
  text: string;
  why: string;
}

function scan(file: string): Hit[] {
  const hits: Hit[] = [];
  readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      for (const { pattern, why } of FORBIDDEN) {
        const m = pattern.exec(line);
        if (m) hits.push({ at: `${file}:${i + 1}`, text: line.trim().slice(0, 120), why: `"${m[0]}": ${why}` });
      }
    });
  return hits;
}

const report = (hits: Hit[]) => hits.map((h) => `${h.at}: ${h.why}\n    ${h.text}`).join('\n');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2… */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
    if (fenced) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const text = h[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .toLowerCase();
    const base = text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOfFile(file: string): Set<string> {
  let a = anchorCache.get(file);
  if (!a) {
    a = anchorsOf(readFileSync(join(ROOT, file), 'utf8'));
    anchorCache.set(file, a);
  }
  return a;
}

/** A link's target checked: the file exists, and so does the anchor when there is one. */
function brokenLink(target: string, anchor: string | undefined): string | undefined {
  if (!existsSync(join(ROOT, target))) return `${target} does not exist`;
  if (anchor === undefined || anchor === '' || !target.endsWith('.md')) return undefined;
  if (anchorsOfFile(target).has(decodeURIComponent(anchor).toLowerCase())) return undefined;
  return `${target} has no heading for #${anchor}`;
}

const isMarkdown = (f: string) => f.endsWith('.md');

/** `docs/<file>.md#anchor` written in code, tests and scripts (relative to the repository). */
function codeLinks(file: string): Hit[] {
  const hits: Hit[] = [];
  readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/(?<![\w/.-])(docs\/[\w.-]+\.md)(?:#([\w%-]+))?/g)) {
        const broken = brokenLink(m[1]!, m[2]);
        if (broken) hits.push({ at: `${file}:${i + 1}`, text: line.trim().slice(0, 120), why: broken });
      }
    });
  return hits;
}

/** Relative Markdown links `[text](path.md#anchor)` and `(#anchor)` in a Markdown file (relative to that file). */
function markdownLinks(file: string): Hit[] {
  const hits: Hit[] = [];
  let fenced = false;
  readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
      if (fenced) return;
      for (const m of line.matchAll(/\]\(([^)\s]*)\)/g)) {
        const href = m[1]!;
        if (href === '' || /^[a-z][a-z0-9+.-]*:/i.test(href)) continue;
        const [path, anchor] = href.split('#', 2) as [string, string | undefined];
        const target = path === '' ? file : rel(normalize(join(ROOT, dirname(file), path)));
        const broken = brokenLink(target, anchor);
        if (broken) hits.push({ at: `${file}:${i + 1}`, text: line.trim().slice(0, 120), why: broken });
      }
    });
  return hits;
}

describe('references in the repository', () => {
  it("reads the project's files (the walk finds the trees)", () => {
    for (const f of ['src/errors.ts', 'test/architecture.test.ts', 'docs/reference.md', 'README.md']) {
      assert.ok(FILES.includes(f), `${f} is scanned`);
    }
    assert.ok(!FILES.some((f) => f.startsWith('test/fixtures/') && f.endsWith('.json')), 'payload fixtures are not');
  });

  it('the anchors are computed as GitHub computes them', () => {
    const a = anchorsOf(
      "# The HTTP contract\n## 8. Answers at a glance\n### Upgrading the store's schema\n" +
        '## Stop\n## Stop\n```\n# not a heading\n```\n<a id="custom"></a>\n## `hooks.path` and `x-request-id`',
    );
    assert.deepEqual([...a].sort(), [
      '8-answers-at-a-glance',
      'custom',
      'hookspath-and-x-request-id',
      'stop',
      'stop-1',
      'the-http-contract',
      'upgrading-the-stores-schema',
    ]);
  });

  const groups = [
    ...TREES.map((t) => ({ name: `${t}/`, files: FILES.filter((f) => f.startsWith(`${t}/`)) })),
    { name: FILES_AT_ROOT.join(', '), files: FILES.filter((f) => FILES_AT_ROOT.includes(f)) },
  ];
  for (const { name, files } of groups) {
    it(`${name}: no pointer outside the repository, no work item as a reason`, () => {
      const hits = files.flatMap(scan);
      assert.equal(hits.length, 0, `${hits.length} reference(s) to replace:\n${report(hits)}`);
    });
  }

  it('every docs/<file>.md#<anchor> written in the tree exists', () => {
    const hits = FILES.flatMap(codeLinks);
    assert.equal(hits.length, 0, `${hits.length} broken link(s):\n${report(hits)}`);
  });

  it('every relative link in the docs and the README points to an existing file and heading', () => {
    const hits = FILES.filter(isMarkdown).flatMap(markdownLinks);
    assert.equal(hits.length, 0, `${hits.length} broken link(s):\n${report(hits)}`);
  });
});
