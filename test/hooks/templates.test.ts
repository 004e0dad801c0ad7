import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isTemplated } from '../../src/config/template-syntax.js';
import {
  compileTemplate,
  lookupPath,
  renderTemplate,
  type TemplateContext,
} from '../../src/hooks/mappings/templates.js';

const NOW = new Date('2026-03-01T12:34:56.789Z');

function ctx(payload: unknown, extra: Partial<TemplateContext> = {}): TemplateContext {
  return { payload, headers: {}, query: {}, path: 'gmail', now: NOW, ...extra };
}

const gmail = {
  source: 'gmail',
  messages: [
    { id: 'm1', from: 'Ada <ada@example.com>', subject: 'Hi', snippet: 'snip', body: 'hello', tags: ['a', 'b'] },
    { id: 'm2', subject: 'Second' },
  ],
  count: 2,
  ok: true,
  nothing: null,
  nested: { a: { b: [[0, 1, { c: 'deep' }]] } },
};

describe('renderTemplate', () => {
  it('renders payload paths, bare and prefixed, with indexes', () => {
    const c = ctx(gmail);
    assert.equal(renderTemplate('hook:gmail:{{messages[0].id}}', c), 'hook:gmail:m1');
    assert.equal(renderTemplate('{{payload.messages[1].subject}}', c), 'Second');
    assert.equal(renderTemplate('{{ messages[0].subject }} / {{messages[1].subject}}', c), 'Hi / Second');
    assert.equal(renderTemplate('{{nested.a.b[0][2].c}}', c), 'deep');
    assert.equal(renderTemplate('{{nested.a.b[0][1]}}', c), '1');
  });

  it('stringifies numbers and booleans, JSON-encodes objects and arrays, empties missing and null', () => {
    const c = ctx(gmail);
    assert.equal(renderTemplate('{{count}}|{{ok}}|{{nothing}}|{{missing.deeper}}', c), '2|true||');
    assert.equal(renderTemplate('{{messages[0].tags}}', c), '["a","b"]');
    assert.equal(renderTemplate('{{messages[1]}}', c), '{"id":"m2","subject":"Second"}');
  });

  it('renders path, now, headers (case-insensitive names) and query', () => {
    const c = ctx(gmail, { headers: { 'x-github-event': 'push' }, query: { repo: 'hookgate', 'a.b': 'dotted' } });
    assert.equal(renderTemplate('{{path}} at {{now}}', c), 'gmail at 2026-03-01T12:34:56.789Z');
    assert.equal(renderTemplate('{{headers.X-GitHub-Event}} {{headers.x-github-event}}', c), 'push push');
    assert.equal(
      renderTemplate('{{query.repo}} {{query.a.b}} {{query.nope}} {{headers.nope}}', c),
      'hookgate dotted  ',
    );
  });

  it('treats indexing a non-array and descending into a primitive as missing', () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case under test
    const c = ctx({ obj: { '0': 'zero' }, s: 'abc', n: 5, arr: [1, , 3] });
    assert.equal(renderTemplate('{{obj[0]}}', c), '');
    assert.equal(renderTemplate('{{s.length}}|{{n.toFixed}}|{{s[0]}}', c), '||');
    assert.equal(renderTemplate('{{arr[5]}}|{{arr[1]}}|{{arr[2]}}', c), '||3');
    assert.equal(renderTemplate('{{obj.0}}', c), 'zero'); // a dot segment is a key, even when numeric
  });

  it('never resolves prototype keys or inherited properties', () => {
    const payload = JSON.parse('{"__proto__": {"polluted": "yes"}, "a": {"b": 1}, "list": [1]}') as unknown;
    const c = ctx(payload);
    for (const t of [
      '{{toString}}',
      '{{hasOwnProperty}}',
      '{{__proto__}}',
      '{{__proto__.polluted}}',
      '{{payload.__proto__.polluted}}',
      '{{constructor}}',
      '{{constructor.name}}',
      '{{a.constructor.prototype}}',
      '{{a.prototype}}',
      '{{list.map}}',
      '{{a.valueOf}}',
      '{{headers.constructor}}',
      '{{query.__proto__}}',
      '{{headers.toString}}',
    ]) {
      assert.equal(renderTemplate(t, c), '', t);
    }
    // own properties still resolve
    assert.equal(renderTemplate('{{a.b}}', c), '1');
  });

  it('leaves malformed expressions empty and literals untouched', () => {
    const c = ctx(gmail);
    assert.equal(renderTemplate('{{}}|{{ }}|{{a..b}}|{{messages[x]}}|{{messages[0}}|{{.}}', c), '|||||');
    assert.equal(renderTemplate('no templates here', c), 'no templates here');
    assert.equal(renderTemplate('{ {single} } {{unclosed', c), '{ {single} } {{unclosed');
    assert.equal(renderTemplate('{{count}}}', c), '2}');
  });

  it('does not execute anything', () => {
    const c = ctx({ a: 1 });
    for (const t of ['{{a + 1}}', '{{process.exit()}}', '{{ (() => 1)() }}', '{{this}}', '{{globalThis}}']) {
      assert.equal(renderTemplate(t, c), '', t);
    }
  });

  it('survives cycles, BigInt members and invalid dates', () => {
    const cyclic: Record<string, unknown> = { x: 1 };
    cyclic.self = cyclic;
    const c = ctx({ cyclic, big: { n: 10n }, bare: 10n }, { now: new Date(NaN) });
    assert.equal(renderTemplate('{{cyclic}}|{{big}}|{{bare}}|{{now}}|{{cyclic.self.self.x}}', c), '||10||1');
  });

  it('compileTemplate renders the same as renderTemplate and can be reused', () => {
    const t = compileTemplate('{{messages[0].from}}: {{messages[0].subject}}');
    assert.equal(t(ctx(gmail)), 'Ada <ada@example.com>: Hi');
    assert.equal(t(ctx({ messages: [{ from: 'Bob', subject: 'Yo' }] })), 'Bob: Yo');
    assert.equal(t(ctx(null)), ': ');
  });
});

describe('isTemplated', () => {
  it('detects expressions', () => {
    assert.equal(isTemplated('hook:gmail:{{messages[0].id}}'), true);
    assert.equal(isTemplated('{{ }}'), true);
    assert.equal(isTemplated('hook:static'), false);
    assert.equal(isTemplated('{ {x} }'), false);
    // stable across calls (no global-regex lastIndex state)
    assert.equal(isTemplated('{{a}}'), true);
    assert.equal(isTemplated('{{a}}'), true);
  });
});

describe('lookupPath', () => {
  it('resolves own paths and rejects the rest', () => {
    assert.equal(lookupPath(gmail, 'messages[0].id'), 'm1');
    assert.deepEqual(lookupPath(gmail, 'messages'), gmail.messages);
    assert.equal(lookupPath([{ id: 'x' }], '[0].id'), 'x');
    assert.equal(lookupPath(gmail, ''), undefined);
    assert.equal(lookupPath(gmail, 'constructor'), undefined);
    assert.equal(lookupPath(gmail, 'messages.__proto__'), undefined);
    assert.equal(lookupPath({}, 'toString'), undefined);
    assert.equal(lookupPath(null, 'a'), undefined);
    assert.equal(lookupPath('str', 'length'), undefined);
  });
});

describe('templates: properties', () => {
  const protoNames = [
    ...Object.getOwnPropertyNames(Object.prototype),
    ...Object.getOwnPropertyNames(Array.prototype),
    ...Object.getOwnPropertyNames(Function.prototype),
    'prototype',
  ];
  const token = fc.oneof(
    fc.constantFrom(...protoNames),
    fc.constantFrom('.', '[0]', '[1]', '[', ']', 'payload.', 'headers.', 'query.', 'path', 'now', ' ', 'a', 'b', '0'),
    fc.string({ maxLength: 4 }),
  );
  const expr = fc.array(token, { maxLength: 6 }).map((parts) => parts.join(''));
  const template = fc
    .array(
      fc.oneof(
        expr.map((e) => `{{${e}}}`),
        fc.string({ maxLength: 5 }),
        fc.constantFrom('{{', '}}', '{', '}'),
      ),
      {
        maxLength: 6,
      },
    )
    .map((parts) => parts.join(''));
  const payload = fc.oneof(
    fc.jsonValue(),
    fc.anything({
      withBigInt: true,
      withBoxedValues: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withNullPrototype: true,
      withSparseArray: true,
      withTypedArray: true,
      withUnicodeString: true,
    }),
  );
  const headers = fc.dictionary(fc.oneof(fc.constantFrom(...protoNames), fc.string({ maxLength: 5 })), fc.string());

  // Anything an inherited property could render as: functions have a `[native code]` / `function` source, and
  // Object.prototype.toString yields `[object …]`.
  const leaks = /\[native code\]|^function|\[object /;

  it('never throws and never renders a value taken from a prototype', () => {
    fc.assert(
      fc.property(template, payload, headers, headers, (t, p, h, q) => {
        const out = renderTemplate(t, { payload: p, headers: h, query: q, path: 'p', now: NOW });
        assert.equal(typeof out, 'string');
        assert.doesNotMatch(out, leaks);
      }),
      { numRuns: 2000 },
    );
  });

  it('a prototype-named key renders only when the payload owns it', () => {
    fc.assert(
      fc.property(fc.constantFrom(...protoNames), payload, (name, p) => {
        const out = renderTemplate(`{{${name}}}`, { payload: p, headers: {}, query: {}, path: 'p', now: NOW });
        const owned =
          p !== null &&
          typeof p === 'object' &&
          !['__proto__', 'prototype', 'constructor'].includes(name) &&
          Object.hasOwn(p, name);
        if (!owned) assert.equal(out, '', name);
      }),
      { numRuns: 2000 },
    );
  });

  it('lookupPath never returns a prototype member', () => {
    fc.assert(
      fc.property(payload, expr, (p, path) => {
        const v = lookupPath(p, path);
        assert.equal(typeof v === 'function', false);
        if (v !== null && typeof v === 'object') {
          for (const proto of [Object.prototype, Array.prototype, Function.prototype]) assert.notEqual(v, proto);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
