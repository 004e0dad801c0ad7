import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { ConfigError } from '../../src/errors.js';
import { resolveTransformModule, resolveTransformsDir } from '../../src/config/paths.js';
import { loadTransform, TransformError, TransformLoader } from '../../src/hooks/mappings/transforms.js';
import { tempDir } from '../support/temp-dir.js';

/*
 * Layout (all real files and symlinks in a temp dir):
 *   <tmp>/config/hooks/transforms/            the root
 *     default.mjs, named.mjs, ...             fixtures written below
 *     sub/nested.js                           subdirectory module
 *     alias.mjs -> sub/nested.js              in-root symlink (allowed)
 *     escape.mjs -> <tmp>/outside/evil.mjs    symlink escape (refused)
 *     outlink -> <tmp>/outside                directory symlink escape (refused)
 *   <tmp>/outside/evil.mjs
 */
let tmp: string;
let configDir: string;
let root: string;
let outside: string;

const write = (file: string, text: string) => {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
};

const input = {
  payload: { n: 2, name: 'x' },
  headers: { 'x-a': '1' },
  query: { q: 'v' },
  url: new URL('http://localhost/hooks/p?q=v'),
  path: 'p',
};

before(() => {
  tmp = tempDir('hookgate-transforms-');
  configDir = path.join(tmp, 'config');
  root = path.join(configDir, 'hooks', 'transforms');
  outside = path.join(tmp, 'outside');
  write(path.join(outside, 'evil.mjs'), 'export default () => ({ message: "evil" });\n');
  write(path.join(root, 'default.mjs'), 'export default ({ payload }) => ({ message: `n=${payload.n}` });\n');
  write(path.join(root, 'named.mjs'), 'export const transform = ({ path }) => ({ message: `path=${path}` });\n');
  write(
    path.join(root, 'both.mjs'),
    'export default () => ({ from: "default" });\nexport const transform = () => ({ from: "transform" });\n' +
      'export const custom = ({ query }) => ({ from: "custom", q: query.q });\nexport const notFn = 42;\n',
  );
  write(
    path.join(root, 'objdefault.mjs'),
    'export default { not: "a function" };\nexport function transform() { return null; }\n',
  );
  write(path.join(root, 'none.mjs'), 'export const helper = 1;\nexport default "text";\n');
  write(
    path.join(root, 'async.mjs'),
    'export default async ({ headers }) => { await new Promise((r) => setTimeout(r, 5)); return { h: headers["x-a"] }; };\n',
  );
  write(path.join(root, 'broken.mjs'), 'export default (\n');
  write(path.join(root, 'throws.mjs'), 'throw new Error("boom at import");\n');
  write(path.join(root, 'sub', 'nested.js'), 'export default () => ({ message: "nested" });\n');
  write(path.join(root, 'cjs.cjs'), 'module.exports = { transform: (i) => ({ message: "cjs " + i.payload.n }) };\n');
  write(path.join(root, 'cjsfn.cjs'), 'module.exports = function (i) { return { message: "cjs-fn " + i.path }; };\n');
  // TypeScript: no package.json here, so tsx treats .ts as CommonJS; .mts is always ESM.
  write(
    path.join(root, 'typed.ts'),
    'import { double } from "./lib/double.ts";\n' +
      'interface In { payload: { n: number } }\n' +
      'export default function (i: In): { message: string } { return { message: `ts ${double(i.payload.n)}` }; }\n',
  );
  write(path.join(root, 'lib', 'double.ts'), 'export const double = (n: number): number => n * 2;\n');
  write(
    path.join(root, 'typed.mts'),
    'export const transform = (i: { payload: { name: string } }): { message: string } => ({ message: `mts ${i.payload.name}` });\n',
  );
  write(path.join(root, 'notes.txt'), 'not a module\n');
  symlinkSync(path.join(root, 'sub', 'nested.js'), path.join(root, 'alias.mjs'));
  symlinkSync(path.join(outside, 'evil.mjs'), path.join(root, 'escape.mjs'));
  symlinkSync(outside, path.join(root, 'outlink'));
  symlinkSync(path.join(root, 'notes.txt'), path.join(root, 'notes.mjs'));
  symlinkSync(path.join(tmp, 'nowhere'), path.join(root, 'dangling'));
});

function configIssue(fn: () => unknown, keyPath: string, pattern?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.equal(err.code, 'config_invalid');
    assert.equal(err.issues.length, 1);
    assert.equal(err.issues[0]?.path, keyPath);
    if (pattern) assert.match(err.issues[0]?.message ?? '', pattern);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------------------------
describe('resolveTransformsDir', () => {
  it('defaults to <configDir>/hooks/transforms', () => {
    assert.equal(resolveTransformsDir(configDir), root);
    assert.equal(resolveTransformsDir(configDir, '  '), root);
  });

  it('accepts relative and absolute directories inside the root, existing or not', () => {
    assert.equal(resolveTransformsDir(configDir, 'hooks/transforms'), root);
    assert.equal(resolveTransformsDir(configDir, 'hooks/transforms/sub'), path.join(root, 'sub'));
    assert.equal(resolveTransformsDir(configDir, path.join(root, 'sub')), path.join(root, 'sub'));
    assert.equal(
      resolveTransformsDir(configDir, 'hooks/transforms/not-yet/created'),
      path.join(root, 'not-yet', 'created'),
    );
    assert.equal(resolveTransformsDir(configDir, 'hooks/transforms/sub/../lib'), path.join(root, 'lib'));
  });

  it('rejects ".." and anything that leaves the root lexically', () => {
    configIssue(() => resolveTransformsDir(configDir, '..'), 'hooks.transformsDir', /must be within/);
    configIssue(() => resolveTransformsDir(configDir, '.'), 'hooks.transformsDir', /must be within/);
    configIssue(() => resolveTransformsDir(configDir, 'hooks'), 'hooks.transformsDir');
    configIssue(() => resolveTransformsDir(configDir, 'hooks/transforms/../../..'), 'hooks.transformsDir');
    configIssue(() => resolveTransformsDir(configDir, 'hooks/transforms-evil'), 'hooks.transformsDir');
  });

  it('rejects an absolute directory outside the root', () => {
    configIssue(() => resolveTransformsDir(configDir, outside), 'hooks.transformsDir', /must be within/);
    configIssue(() => resolveTransformsDir(configDir, '/'), 'hooks.transformsDir');
  });

  it('rejects a directory that escapes through a symlink, even below a missing tail', () => {
    configIssue(() => resolveTransformsDir(configDir, 'hooks/transforms/outlink'), 'hooks.transformsDir', /symlink/);
    configIssue(
      () => resolveTransformsDir(configDir, 'hooks/transforms/outlink/later'),
      'hooks.transformsDir',
      /symlink/,
    );
    configIssue(
      () => resolveTransformsDir(configDir, 'hooks/transforms/dangling/x'),
      'hooks.transformsDir',
      /dangling/,
    );
  });

  it('refuses a root that is itself a symlink (whoever controls the link would choose the code run)', () => {
    const cfg2 = path.join(tmp, 'config2');
    const realTransforms = path.join(tmp, 'shared-transforms');
    mkdirSync(path.join(realTransforms, 'team'), { recursive: true });
    mkdirSync(path.join(cfg2, 'hooks'), { recursive: true });
    symlinkSync(realTransforms, path.join(cfg2, 'hooks', 'transforms'));
    configIssue(() => resolveTransformsDir(cfg2, 'hooks/transforms/team'), 'hooks.transformsDir', /is a symlink/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('resolveTransformModule', () => {
  const key = 'hooks.mappings[2].transform.module';

  it('resolves modules in the root and in subdirectories to their real path', () => {
    assert.equal(resolveTransformModule(root, 'default.mjs', key), path.join(root, 'default.mjs'));
    assert.equal(resolveTransformModule(root, 'sub/nested.js', key), path.join(root, 'sub', 'nested.js'));
    assert.equal(resolveTransformModule(root, './typed.ts', key), path.join(root, 'typed.ts'));
    assert.equal(resolveTransformModule(path.join(root, 'sub'), 'nested.js', key), path.join(root, 'sub', 'nested.js'));
  });

  it('accepts an in-root symlink and returns its target', () => {
    assert.equal(resolveTransformModule(root, 'alias.mjs', key), path.join(root, 'sub', 'nested.js'));
  });

  it('rejects unsafe module paths with the given key path', () => {
    const cases: Array<[string, RegExp]> = [
      ['', /non-empty/],
      ['   ', /non-empty/],
      ['../outside/evil.mjs', /\.\./],
      ['sub/../../outside/evil.mjs', /\.\./],
      ['sub\\..\\..\\outside\\evil.mjs', /\.\./],
      [path.join(outside, 'evil.mjs'), /absolute/],
      ['/etc/passwd.js', /absolute/],
      ['\\\\server\\share\\x.mjs', /absolute/],
      ['C:\\x.mjs', /absolute/],
      ['C:x.mjs', /":"/],
      ['~/evil.mjs', /~/],
      ['~root.mjs', /~/],
      ['file:default.mjs', /":"/],
      ['data:text/javascript,export default 1', /":"/],
      ['notes.txt', /must end in/],
      ['default', /must end in/],
      ['default.MJS', /must end in/],
    ];
    for (const [module, pattern] of cases) configIssue(() => resolveTransformModule(root, module, key), key, pattern);
  });

  it('rejects missing files and directories', () => {
    configIssue(() => resolveTransformModule(root, 'missing.mjs', key), key, /does not exist/);
    configIssue(() => resolveTransformModule(path.join(root, 'nope'), 'default.mjs', key), key, /does not exist/);
    mkdirSync(path.join(root, 'dir.mjs'), { recursive: true });
    configIssue(() => resolveTransformModule(root, 'dir.mjs', key), key, /not a file/);
  });

  it('rejects a module symlink that escapes the root', () => {
    configIssue(() => resolveTransformModule(root, 'escape.mjs', key), key, /symlink/);
  });

  it('rejects a module reached through a directory symlink that escapes the root', () => {
    configIssue(() => resolveTransformModule(root, 'outlink/evil.mjs', key), key, /symlink/);
  });

  it('rejects an in-root symlink whose target has a disallowed extension', () => {
    configIssue(() => resolveTransformModule(root, 'notes.mjs', key), key, /symlink target/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('loadTransform', () => {
  const file = (name: string) => resolveTransformModule(root, name, 'k');

  async function rejectsWith(p: Promise<unknown>, code: string, ...inMessage: string[]) {
    await assert.rejects(p, (err: unknown) => {
      assert.ok(err instanceof TransformError, `expected TransformError, got ${String(err)}`);
      assert.equal(err.code, code);
      for (const s of inMessage) assert.ok(err.message.includes(s), `"${err.message}" should mention ${s}`);
      return true;
    });
  }

  it('uses the default export', async () => {
    const fn = await loadTransform(file('default.mjs'));
    assert.deepEqual(await fn(input), { message: 'n=2' });
  });

  it('falls back to the transform export', async () => {
    const fn = await loadTransform(file('named.mjs'));
    assert.deepEqual(await fn(input), { message: 'path=p' });
  });

  it('prefers default over transform, and a non-function default falls through to transform', async () => {
    assert.deepEqual(await (await loadTransform(file('both.mjs')))(input), { from: 'default' });
    assert.equal(await (await loadTransform(file('objdefault.mjs')))(input), null);
  });

  it('uses an explicitly named export', async () => {
    assert.deepEqual(await (await loadTransform(file('both.mjs'), 'custom'))(input), { from: 'custom', q: 'v' });
    assert.deepEqual(await (await loadTransform(file('both.mjs'), 'transform'))(input), { from: 'transform' });
  });

  it('reports a missing or non-function export as transform_invalid, naming file and export', async () => {
    const f = file('both.mjs');
    await rejectsWith(loadTransform(f, 'nope'), 'transform_invalid', f, '"nope"');
    await rejectsWith(loadTransform(f, 'notFn'), 'transform_invalid', f, '"notFn"', 'a number');
    await rejectsWith(loadTransform(file('none.mjs')), 'transform_invalid', 'neither a default function', 'a string');
  });

  it('awaits async transforms like sync ones', async () => {
    const fn = await loadTransform(file('async.mjs'));
    const out = fn(input);
    assert.ok(out instanceof Promise);
    assert.deepEqual(await out, { h: '1' });
  });

  it('reports syntax errors and import-time throws as transform_load_failed', async () => {
    await rejectsWith(loadTransform(file('broken.mjs')), 'transform_load_failed', file('broken.mjs'));
    await rejectsWith(loadTransform(file('throws.mjs')), 'transform_load_failed', 'boom at import');
  });

  it('loads CommonJS modules (module.exports = fn, module.exports = { transform })', async () => {
    assert.deepEqual(await (await loadTransform(file('cjsfn.cjs')))(input), { message: 'cjs-fn p' });
    assert.deepEqual(await (await loadTransform(file('cjs.cjs')))(input), { message: 'cjs 2' });
  });

  it('loads TypeScript transforms (.ts compiled as CommonJS, .mts as ESM) through tsx', async () => {
    assert.deepEqual(await (await loadTransform(file('typed.ts')))(input), { message: 'ts 4' });
    assert.deepEqual(await (await loadTransform(file('typed.mts')))(input), { message: 'mts x' });
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe('TransformLoader', () => {
  it('caches per file::export within a generation', async () => {
    const loader = new TransformLoader({ root });
    const f = resolveTransformModule(root, 'both.mjs', 'k');
    const a = await loader.load(f);
    const b = await loader.load(f);
    const c = await loader.load(f, 'custom');
    assert.equal(a, b);
    assert.notEqual(a, c);
    assert.equal(loader.size, 2);
    await loader.dispose();
  });

  it('gives every loader a new generation', () => {
    const a = new TransformLoader();
    const b = new TransformLoader();
    assert.ok(b.generation > a.generation);
  });

  it('does not cache failures', async () => {
    const loader = new TransformLoader({ root });
    const f = resolveTransformModule(root, 'both.mjs', 'k');
    await assert.rejects(loader.load(f, 'nope'), TransformError);
    assert.equal(loader.size, 0);
    await loader.dispose();
  });

  for (const [name, v1, v2] of [
    ['reload.mjs', 'export default () => "v1";\n', 'export default () => "v2";\n'],
    ['reload.cjs', 'module.exports = () => "v1";\n', 'module.exports = () => "v2";\n'],
    ['reload.ts', 'export default (): string => "v1";\n', 'export default (): string => "v2";\n'],
    ['reload.mts', 'export default (): string => "v1";\n', 'export default (): string => "v2";\n'],
  ] as const) {
    it(`re-imports an edited ${path.extname(name)} file in a new generation; the old one keeps its copy`, async () => {
      write(path.join(root, name), v1);
      const f = resolveTransformModule(root, name, 'k');
      const gen1 = new TransformLoader({ root });
      const old = await gen1.load(f);
      assert.equal(await old(input), 'v1');
      write(path.join(root, name), v2);
      assert.equal(await (await gen1.load(f))(input), 'v1', 'same generation: cached');
      const gen2 = new TransformLoader({ root });
      assert.equal(await (await gen2.load(f))(input), 'v2');
      await gen1.dispose();
      assert.equal(await old(input), 'v1', 'a disposed generation’s functions keep working');
      await gen2.dispose();
    });
  }

  it('re-imports helper modules of a TypeScript transform in a new generation', async () => {
    write(path.join(root, 'helped', 'h.ts'), 'export const v = (): string => "h1";\n');
    write(path.join(root, 'helped', 'main.ts'), 'import { v } from "./h.ts";\nexport default (): string => v();\n');
    const f = resolveTransformModule(root, 'helped/main.ts', 'k');
    const gen1 = new TransformLoader({ root });
    assert.equal(await (await gen1.load(f))(input), 'h1');
    write(path.join(root, 'helped', 'h.ts'), 'export const v = (): string => "h2";\n');
    const gen2 = new TransformLoader({ root });
    assert.equal(await (await gen2.load(f))(input), 'h2');
    await gen1.dispose();
    await gen2.dispose();
  });

  it('refuses to load after dispose', async () => {
    const loader = new TransformLoader({ root });
    await loader.dispose();
    await assert.rejects(loader.load(resolveTransformModule(root, 'default.mjs', 'k')), /disposed/);
  });
});
