import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { knownRoutes, OTHER, PATH_CLASS_MAX, pathClass, RefusalAggregator } from '../../src/ingress/refusals.js';
import type { RefusalWindow } from '../../src/store/types.js';
import { parse } from '../config/helpers.js';
import { waitFor } from '../support/wait.js';

describe('pathClass', () => {
  const { hooks } = parse({
    hooks: {
      presets: ['gmail', { use: 'stripe', path: 'billing/stripe', secret: 'whsec_x' }],
      mappings: [{ match: { path: 'github/org' }, messageTemplate: 'm' }, { messageTemplate: 'm' }],
    },
  });
  const known = knownRoutes(hooks);
  it('keeps the sub-path of a known route, cut to the bound with a marker', () => {
    assert.equal(pathClass('wake', known), 'wake');
    assert.equal(pathClass('github/org', known), 'github/org');
    assert.equal(pathClass('gmail', known), 'gmail');
    assert.equal(pathClass('billing/stripe', known), 'billing/stripe', "a sender preset's path");
    const long = `agent/${'x'.repeat(10_000)}`;
    assert.equal(pathClass(long, known), `${long.slice(0, PATH_CLASS_MAX)}…`);
  });
  it('counts every other path as `other`', () => {
    assert.equal(pathClass('wp-admin/x.php', known), OTHER);
    assert.equal(pathClass('x'.repeat(15_000), known), OTHER);
  });
});

describe('RefusalAggregator', () => {
  const collect = (limits = { windowSeconds: 10, maxKeys: 3 }) => {
    const windows: RefusalWindow[] = [];
    return { windows, agg: new RefusalAggregator(limits, (w) => windows.push(w)) };
  };
  const T = 1_700_000_000_000;

  it('counts repeats of one key in memory; a window is handed over once, when the next one starts', () => {
    const { windows, agg } = collect();
    for (let i = 0; i < 1000; i++) agg.add(T + i, 401, 'unauthorized', 'agent', '203.0.113.7');
    assert.equal(windows.length, 0);
    assert.equal(agg.size, 1);
    agg.add(T + 10_000, 404, 'not_found', 'other', '203.0.113.7');
    assert.equal(windows.length, 1);
    assert.deepEqual(windows[0], {
      at: T,
      windowMs: 10_000,
      counts: [{ status: 401, code: 'unauthorized', path: 'agent', bucket: '203.0.113.7', count: 1000 }],
    });
    agg.flush();
    assert.equal(windows.length, 2);
    assert.equal(windows[1]!.at, T + 10_000);
    agg.flush(); // nothing counted: nothing written
    assert.equal(windows.length, 2);
  });

  it('is bounded: past maxKeys, new keys fold into one `other` key per status and code', () => {
    const { windows, agg } = collect();
    for (let i = 0; i < 10_000; i++) agg.add(T, 401, 'unauthorized', 'agent', `10.0.${i >> 8}.${i & 255}`);
    agg.add(T, 404, 'not_found', 'wake', '10.9.9.9');
    assert.equal(agg.size, 5); // 3 keys, the 401 overflow, the 404 overflow
    agg.flush();
    const counts = windows[0]!.counts;
    assert.equal(
      counts.reduce((n, c) => n + c.count, 0),
      10_001,
    );
    assert.deepEqual(
      counts.find((c) => c.status === 401 && c.bucket === OTHER),
      { status: 401, code: 'unauthorized', path: OTHER, bucket: OTHER, count: 9997 },
    );
  });

  it('flushes a window that ended while nothing more came in (timer)', async () => {
    const { windows, agg } = collect({ windowSeconds: 1, maxKeys: 10 });
    agg.add(Date.now(), 401, 'unauthorized', 'wake', '192.0.2.1');
    await waitFor('the window flushed by its timer', () => windows.length > 0);
    assert.equal(windows.length, 1);
    assert.equal(windows[0]!.counts[0]!.count, 1);
  });
});
