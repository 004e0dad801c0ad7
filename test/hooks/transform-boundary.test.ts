/**
 * What crosses the transform boundary: what a transform's failure puts in the log, what payload a
 * transform is handed (no prototype keys), and the transforms root that config load accepts (no symlink).
 */
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import pino from 'pino';
import sjson from 'secure-json-parse';
import { resolveTransformsDir } from '../../src/config/paths.js';
import { validateConfig } from '../../src/config/load.js';
import { ConfigError, HttpError } from '../../src/errors.js';
import { buildHooksContext } from '../../src/hooks/context.js';
import type { HookAction } from '../../src/hooks/dispatch.js';
import { withoutPrototypeKeys } from '../../src/hooks/mappings/transforms.js';
import { createHookRoutes, type RouteResult } from '../../src/hooks/routes.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

let dir: string;

before(() => {
  dir = tempDir('hookgate-transform-boundary-');
  const transforms = path.join(dir, 'hooks', 'transforms');
  mkdirSync(transforms, { recursive: true });
  writeFileSync(
    path.join(transforms, 'parse.mjs'),
    'export default ({ payload }) => ({ message: JSON.parse(payload.secretish).m });\n',
  );
  writeFileSync(
    path.join(transforms, 'coded.mjs'),
    'export default ({ payload }) => { const e = new RangeError(`bad ${payload.secretish}`); e.code = "E_TOO_BIG"; throw e; };\n',
  );
  writeFileSync(
    path.join(transforms, 'named.mjs'),
    'export default ({ payload }) => { const e = new Error("x"); e.name = payload.secretish; throw e; };\n',
  );
  writeFileSync(
    path.join(transforms, 'assign.mjs'),
    'export default ({ payload }) => { const o = Object.assign({}, payload.extra); return { message: `polluted=${String(o.polluted)} own=${Object.keys(o).join(",")}` }; };\n',
  );
});

function setup(mappings: unknown[], level: 'info' | 'debug') {
  const config = validateConfig({ hooks: { enabled: true, token: TOKEN, mappings } }, undefined, dir, { env: {} });
  const logs: Array<Record<string, unknown>> = [];
  const lines: string[] = [];
  const logger = pino(
    { level },
    { write: (line: string) => void (lines.push(line), logs.push(JSON.parse(line) as Record<string, unknown>)) },
  );
  const routes = createHookRoutes({ logger });
  const ctx = buildHooksContext(config, 1);
  const resolve = (subPath: string, payload: Record<string, unknown>): Promise<RouteResult> =>
    routes.resolve({
      ctx,
      subPath,
      payload,
      rawBody: Buffer.from(JSON.stringify(payload)),
      headers: {},
      rawHeaders: {},
      query: new URLSearchParams(),
      now: Date.now(),
      tokenVerified: true,
    });
  return { resolve, logs, lines };
}

async function mappingFailure(p: Promise<unknown>): Promise<HttpError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof HttpError, `expected an HttpError, got ${String(err)}`);
  assert.equal(err.status, 500);
  assert.equal(err.code, 'mapping_failed');
  return err;
}

describe('a transform that throws: the log line', () => {
  const SECRET = '{"card":"4111-1111-1111-1111"';

  it('at info carries the error class and a code, never the message (JSON.parse quotes the payload)', async () => {
    const s = setup([{ id: 'p', match: { path: 'p' }, transform: { module: 'parse.mjs' } }], 'info');
    const err = await mappingFailure(s.resolve('p', { secretish: SECRET }));
    assert.equal(err.message, 'hook mapping failed: transform threw', 'the 500 names the reason, as before');
    const line = s.logs.find((l) => l.mappingId === 'p');
    assert.ok(line, s.lines.join('\n'));
    assert.equal(line.code, 'transform_threw');
    assert.equal(line.errorClass, 'SyntaxError');
    assert.equal(line.detail, undefined);
    assert.ok(!s.lines.join('\n').includes('4111'), s.lines.join('\n'));
  });

  it("at info carries the thrown error's own code, and drops a class name that is not an identifier", async () => {
    const s = setup(
      [
        { id: 'c', match: { path: 'c' }, transform: { module: 'coded.mjs' } },
        { id: 'n', match: { path: 'n' }, transform: { module: 'named.mjs' } },
      ],
      'info',
    );
    await mappingFailure(s.resolve('c', { secretish: SECRET }));
    await mappingFailure(s.resolve('n', { secretish: SECRET }));
    const coded = s.logs.find((l) => l.mappingId === 'c')!;
    assert.equal(coded.errorClass, 'RangeError');
    assert.equal(coded.errorCode, 'E_TOO_BIG');
    assert.equal(
      s.logs.find((l) => l.mappingId === 'n')!.errorClass,
      'Error',
      'a name built from the payload is not logged',
    );
    assert.ok(!s.lines.join('\n').includes('4111'), s.lines.join('\n'));
  });

  it('at debug also carries the message as detail', async () => {
    const s = setup([{ id: 'p', match: { path: 'p' }, transform: { module: 'parse.mjs' } }], 'debug');
    await mappingFailure(s.resolve('p', { secretish: 'not json' }));
    assert.match(String(s.logs.find((l) => l.mappingId === 'p')!.detail), /^SyntaxError: .*JSON/);
  });
});

describe('a transform is handed a payload without prototype keys', () => {
  it('Object.assign({}, payload.extra) does not take a __proto__ the sender put in the JSON', async () => {
    const s = setup([{ match: { path: 'a' }, transform: { module: 'assign.mjs' } }], 'info');
    // As the ingress parses it: JSON.parse makes "__proto__" an own property.
    const payload = JSON.parse(
      '{"extra":{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},"kept":1}}',
    ) as Record<string, unknown>;
    const r = await s.resolve('a', payload);
    assert.equal(r.kind, 'actions', JSON.stringify(r));
    const action = (r as Extract<RouteResult, { kind: 'actions' }>).actions[0] as Extract<
      HookAction,
      { kind: 'agent' }
    >;
    assert.equal(action.run.message, 'polluted=undefined own=kept');
    assert.ok(Object.hasOwn(payload.extra as object, '__proto__'), "the request's own payload is not changed");
  });

  it('withoutPrototypeKeys drops what secure-json-parse (protoAction/constructorAction: remove) drops, nothing more', () => {
    const key = fc.oneof(
      fc.constantFrom('__proto__', 'constructor', 'prototype', 'a', 'b'),
      fc.string({ maxLength: 4 }),
    );
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 1 }),
        tie('obj'),
        fc.array(tie('tree'), { maxLength: 3 }),
      ),
      obj: fc.dictionary(key, tie('tree'), { maxKeys: 4 }),
    }));
    fc.assert(
      fc.property(tree, (t) => {
        // Built through JSON text, so "__proto__" keys are own properties exactly as the ingress sees them.
        const text = JSON.stringify(t, (_k, v: unknown) => (Object.is(v, -0) ? 0 : v));
        const reference: unknown = sjson.parse(text, null, { protoAction: 'remove', constructorAction: 'remove' });
        assert.deepEqual(withoutPrototypeKeys(JSON.parse(text)), reference);
      }),
      { numRuns: 300 },
    );
  });

  it('copes with nesting as deep as a 256 KB body allows', () => {
    const depth = 128 * 1024;
    const copy = withoutPrototypeKeys(JSON.parse('['.repeat(depth) + ']'.repeat(depth)));
    assert.ok(Array.isArray(copy));
  });
});

describe('the transforms root', () => {
  const issueOf = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof ConfigError, String(err));
      assert.equal(err.issues[0]!.path, 'hooks.transformsDir');
      return err.issues[0]!.message;
    }
    assert.fail('no ConfigError');
  };

  it('is refused at config load when it is a symlink, by key path, even one that stays nearby', () => {
    const cfg = tempDir('hookgate-linked-root-');
    const real = path.join(cfg, 'real-transforms');
    mkdirSync(real);
    writeFileSync(path.join(real, 't.mjs'), 'export default () => null;\n');
    mkdirSync(path.join(cfg, 'hooks'));
    symlinkSync(real, path.join(cfg, 'hooks', 'transforms'));
    assert.match(
      issueOf(() => resolveTransformsDir(cfg)),
      /hooks\/transforms is a symlink \(to .*real-transforms\).*real directory/,
    );
    const load = () =>
      validateConfig(
        {
          hooks: { enabled: true, token: TOKEN, mappings: [{ match: { path: 't' }, transform: { module: 't.mjs' } }] },
        },
        undefined,
        cfg,
        { env: {} },
      );
    assert.match(issueOf(load), /is a symlink/);
  });

  it('is refused when its hooks/ parent is a symlink', () => {
    const cfg = tempDir('hookgate-linked-hooks-');
    const elsewhere = tempDir('hookgate-elsewhere-');
    mkdirSync(path.join(elsewhere, 'transforms'));
    symlinkSync(elsewhere, path.join(cfg, 'hooks'));
    assert.match(
      issueOf(() => resolveTransformsDir(cfg, 'hooks/transforms')),
      /hooks is a symlink/,
    );
  });
});
