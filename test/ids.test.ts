import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId, randomHex } from '../src/ids.js';

describe('ids', () => {
  it('newId: UUIDv7s, time-ordered and distinct across several refills of the random pool', () => {
    const ids = Array.from({ length: 2000 }, () => newId());
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(new Set(ids).size, ids.length);
    // The first 48 bits are the milliseconds: never decreasing.
    const ms = ids.map((id) => parseInt(id.replace(/-/g, '').slice(0, 12), 16));
    for (let i = 1; i < ms.length; i++) assert.ok(ms[i]! >= ms[i - 1]!);
  });

  it('newId: the time is now, and the variant and random nibbles take every value', () => {
    const before = Date.now();
    const ids = Array.from({ length: 2000 }, () => newId());
    const after = Date.now();
    for (const id of ids) {
      const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
      assert.ok(ms >= before && ms <= after, `${id}: ${ms} not within ${before}..${after}`);
    }
    assert.deepEqual(new Set(ids.map((id) => id[19])), new Set(['8', '9', 'a', 'b']));
    for (const at of [15, 20, 35]) assert.equal(new Set(ids.map((id) => id[at])).size, 16, `position ${at}`);
  });

  it('randomHex: the asked number of bytes as lowercase hex, distinct across refills of the pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const h = randomHex(8);
      assert.match(h, /^[0-9a-f]{16}$/);
      seen.add(h);
    }
    assert.equal(seen.size, 3000);
    assert.match(randomHex(3), /^[0-9a-f]{6}$/);
  });
});
