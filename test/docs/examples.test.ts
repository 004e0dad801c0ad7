/**
 * The examples of README.md and docs/*.md, run against the built CLI (dist/cli/main.js) exactly as written.
 *
 * A fenced block is an example when an HTML comment right above it says so (docs/architecture.md, "Docs examples"):
 *   <!-- example: config -->            a whole config file: `hookgate config check` exits 0
 *   <!-- example: config fragment -->   top-level keys without the outer braces, merged over hooks on with a token
 *   <!-- example: config preset -->     one `hooks.presets` entry
 *   <!-- example: config mapping -->    one `hooks.mappings` entry
 *   ... invalid                         (after any of the four) `config check` exits 1 instead
 *   <!-- example: sh -->                shell lines run by bash in the directory of a running server, must exit 0
 *   <!-- example: sh fresh -->          the same in an empty directory, without a server
 * The worked examples' configs (`<!-- example NAME: config -->`, run end to end by test/e2e/docs-mappings.test.ts)
 * are checked here too, with their own env blocks. Every `{ env: "NAME" }` or `${NAME}` a config names is set to a
 * placeholder and every relative `{ file: "path" }` is written, so a check fails on the config, not on the machine.
 * In shell examples `npx hookgate` (and `hookgate`) is the built CLI, and the ports 18789 and 18790 are the server's.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, isAbsolute, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import JSON5 from 'json5';
import { parseExamples } from '../support/doc-examples.js';
import { CLI, type Hookgate, ROOT, startHookgate } from '../support/server.js';
import { removeDir, tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

interface Block {
  where: string;
  kind: string;
  flags: string[];
  text: string;
  env: Record<string, string>;
  files: Array<{ path: string; text: string }>;
}

const PLACEHOLDER = 'docs-example-secret-0123456789abcdef';
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Every marked block of every page, with the page and line it starts at. */
function collect(): Block[] {
  const blocks: Block[] = [];
  const re = /<!-- example: ([\w-]+)((?: [\w-]+)*) -->\s*\n```[\w-]*\n([\s\S]*?)\n```/g;
  for (const page of PAGES) {
    const md = readFileSync(join(ROOT, page), 'utf8');
    for (const m of md.matchAll(re)) {
      const line = md.slice(0, m.index).split('\n').length;
      const flags = m[2]!.trim().split(/\s+/).filter(Boolean);
      blocks.push({ where: `${page}:${line}`, kind: m[1]!, flags, text: m[3]!, env: {}, files: [] });
    }
    for (const ex of parseExamples(md)) {
      if (!ex.config) continue;
      blocks.push({
        where: `${page} example ${ex.name}`,
        kind: 'config',
        flags: [],
        text: JSON.stringify(ex.config),
        env: ex.env,
        files: ex.files,
      });
    }
  }
  return blocks;
}

/**
 * The config file's text for a config block. A part is set in a config that has what the part assumes: hooks on with
 * a token, and the messaging platforms it names configured with tokens of the right shape.
 */
function configText(b: Block): string {
  const channels = {
    ...(b.text.includes('"telegram"') && { telegram: { botToken: '123456789:docs-example' } }),
    ...(b.text.includes('"slack"') && { slack: { botToken: 'xoxb-docs-example' } }),
  };
  const base = { hooks: { enabled: true, token: TOKEN }, channels };
  if (b.flags.includes('fragment')) {
    const part = JSON5.parse(`{${b.text}}`) as { hooks?: Record<string, unknown> };
    if (part.hooks && 'tokens' in part.hooks) base.hooks = { enabled: true } as typeof base.hooks;
    return JSON.stringify(merge(base, part));
  }
  if (b.flags.includes('preset')) return JSON.stringify(merge(base, { hooks: { presets: [JSON5.parse(b.text)] } }));
  if (b.flags.includes('mapping')) return JSON.stringify(merge(base, { hooks: { mappings: [JSON5.parse(b.text)] } }));
  return b.text;
}

function merge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    const objects = [v, prev].every((x) => x && typeof x === 'object' && !Array.isArray(x));
    out[k] = objects ? merge(prev as Record<string, unknown>, v as Record<string, unknown>) : v;
  }
  return out;
}

/**
 * Placeholders for the variables a config names (each its own, as two secrets must differ), its relative secret files
 * and the example's own files, written into `dir`.
 */
function prepare(b: Block, text: string, dir: string): Record<string, string> {
  const { env } = b;
  const out: Record<string, string> = {};
  for (const f of b.files) {
    mkdirSync(dirname(join(dir, f.path)), { recursive: true });
    writeFileSync(join(dir, f.path), f.text);
  }
  for (const m of text.matchAll(/\benv"?\s*:\s*"([A-Za-z_][A-Za-z0-9_]*)"|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) {
    const name = (m[1] ?? m[2])!;
    out[name] =
      env[name] ??
      (/URL$/.test(name)
        ? 'postgres://127.0.0.1:5432/test'
        : /HOST$/.test(name)
          ? '127.0.0.1'
          : `${PLACEHOLDER}-${name}`);
  }
  for (const m of text.matchAll(/\bfile"?\s*:\s*"([^"$]+)"/g)) {
    if (isAbsolute(m[1]!)) continue;
    const file = join(dir, m[1]!);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${PLACEHOLDER}-${m[1]!.replace(/\W/g, '-')}\n`, { mode: 0o600 });
  }
  return { ...env, ...out };
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd, env: { ...process.env, HOOKGATE_TOKEN: '', HOOKGATE_CONFIG: '', ...env } });
    let out = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.stdin.end();
    p.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** `npx hookgate` and `hookgate` are the built CLI; any other npx is refused (it would ask the registry). */
const PRELUDE = `set -e -o pipefail
hookgate() { node "$DOCS_CLI" "$@"; }
npx() { if [ "$1" = hookgate ]; then shift; hookgate "$@"; else echo "docs example: npx $1 is not allowed" >&2; return 1; fi; }
`;

const blocks = collect();
const configs = blocks.filter((b) => b.kind === 'config');
const shells = blocks.filter((b) => b.kind === 'sh');

describe('docs examples', () => {
  it('marks at least the README quick start and config examples of config.md, mappings.md, senders.md', () => {
    const pages = new Set(blocks.map((b) => b.where.replace(/[: ].*$/, '')));
    for (const p of ['README.md', 'docs/config.md', 'docs/mappings.md', 'docs/senders.md'])
      assert.ok(pages.has(p), `${p} has no example`);
    for (const b of blocks) assert.ok(['config', 'sh'].includes(b.kind), `${b.where}: unknown example kind ${b.kind}`);
  });

  it('every config example passes hookgate config check (or fails it when marked invalid)', async () => {
    const dir = tempDir('hookgate-docs-config-');
    try {
      const failures: string[] = [];
      // Two at a time: each check is a node process; the machine may be shared.
      const queue = configs.map((b, i) => ({ b, i }));
      const worker = async () => {
        for (let job = queue.shift(); job; job = queue.shift()) {
          const own = join(dir, String(job.i));
          mkdirSync(own, { recursive: true });
          let text: string;
          try {
            text = configText(job.b);
          } catch (err) {
            failures.push(`${job.b.where}: ${(err as Error).message}`);
            continue;
          }
          writeFileSync(join(own, 'hookgate.json5'), text);
          const env = prepare(job.b, text, own);
          const r = await run(
            process.execPath,
            [CLI, 'config', 'check', '--config', join(own, 'hookgate.json5')],
            own,
            env,
          );
          const want = job.b.flags.includes('invalid') ? 1 : 0;
          if (r.code !== want)
            failures.push(`${job.b.where}: config check exited ${r.code}, expected ${want}\n${r.out}`);
        }
      };
      await Promise.all([worker(), worker()]);
      assert.equal(failures.length, 0, failures.join('\n\n'));
    } finally {
      removeDir(dir);
    }
  });

  describe('shell examples', () => {
    let hg: Hookgate | undefined;
    let ports: [number, number];
    before(async () => {
      if (!shells.some((b) => !b.flags.includes('fresh'))) return;
      ports = [await freePort(), await freePort()];
      const dir = tempDir('hookgate-docs-sh-');
      mkdirSync(join(dir, 'data'), { recursive: true, mode: 0o700 });
      writeFileSync(join(dir, 'data/hook-token'), `${TOKEN}\n`, { mode: 0o600 });
      writeFileSync(join(dir, 'data/admin-token'), `${TOKEN}-admin\n`, { mode: 0o600 });
      hg = await startHookgate({
        dir,
        config: {
          gateway: { port: ports[0] },
          storage: { driver: 'sqlite', path: './data/hookgate.db' },
          hooks: { enabled: true, token: { file: 'data/hook-token' } },
          admin: { enabled: true, port: ports[1], token: { file: 'data/admin-token' } },
          logging: { level: 'info' },
        },
      });
    });
    after(async () => {
      if (!hg) return;
      const dir = hg.dir;
      await hg.cleanup();
      removeDir(dir);
    });

    for (const b of shells) {
      it(`${b.where} exits 0`, { timeout: 60_000 }, async () => {
        const fresh = b.flags.includes('fresh');
        const cwd = fresh ? tempDir('hookgate-docs-fresh-') : hg!.dir;
        try {
          const text = fresh
            ? b.text
            : b.text.replaceAll('18789', String(ports[0])).replaceAll('18790', String(ports[1]));
          const r = await run('bash', ['-c', PRELUDE + text], cwd, { DOCS_CLI: CLI });
          assert.equal(r.code, 0, `${b.where} exited ${r.code}:\n${r.out}`);
          assert.doesNotMatch(r.out, /"ok":\s*false/, `${b.where} was refused:\n${r.out}`);
        } finally {
          if (fresh) removeDir(cwd);
        }
      });
    }
  });
});
