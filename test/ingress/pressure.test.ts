import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { performance } from 'node:perf_hooks';
import { BUSY_HOLD_MS, BUSY_TURN_REQUESTS, IngressPressure } from '../../src/ingress/pressure.js';

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('ingress pressure', () => {
  it('is not busy at a rate it keeps up with: a few requests per turn of the event loop', async () => {
    const p = new IngressPressure();
    for (let turn = 0; turn < 50; turn++) {
      for (let i = 0; i < BUSY_TURN_REQUESTS - 1; i++) p.arrived();
      await nextTurn();
      assert.equal(p.busy(), false);
    }
  });

  it(`is busy for ${BUSY_HOLD_MS} ms after a turn that brought ${BUSY_TURN_REQUESTS} or more`, async () => {
    const p = new IngressPressure();
    for (let i = 0; i < BUSY_TURN_REQUESTS; i++) p.arrived();
    assert.equal(p.busy(), false, 'counted at the end of the turn');
    await nextTurn();
    const now = performance.now();
    assert.equal(p.busy(now), true);
    assert.equal(p.busy(now + BUSY_HOLD_MS + 1), false, 'and no longer once the hold passed');
    await nextTurn();
    assert.equal(p.busy(), true, 'a quiet turn does not end it early');
  });
});
