import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { performance } from 'node:perf_hooks';
import { BUSY_COMMITTING, BUSY_HOLD_MS, BUSY_TURN_REQUESTS, IngressPressure } from '../../src/ingress/pressure.js';

const nextTurn = () => new Promise((r) => setImmediate(r));
const afterHold = () => performance.now() + BUSY_HOLD_MS + 1;

describe('ingress pressure', () => {
  it('is not busy at a rate it keeps up with: a few requests per turn of the event loop', async () => {
    const p = new IngressPressure();
    for (let turn = 0; turn < 50; turn++) {
      for (let i = 0; i < BUSY_TURN_REQUESTS - 1; i++) p.arrived();
      await nextTurn();
      assert.equal(p.busy(), false);
    }
  });

  it(`is busy for ${BUSY_HOLD_MS} ms after a turn that brought ${BUSY_TURN_REQUESTS} or more (long turns: SQLite)`, async () => {
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

  it(`is busy while ${BUSY_COMMITTING} or more requests wait for their commit, however few arrive per turn (PostgreSQL)`, async () => {
    const p = new IngressPressure();
    for (let i = 0; i < BUSY_COMMITTING; i++) {
      p.arrived(); // one request per turn: the per-turn count never says busy
      p.commitStarted();
      assert.equal(p.busy(afterHold()), i === BUSY_COMMITTING - 1, `${i + 1} waiting`);
      await nextTurn();
    }
    await nextTurn();
    assert.equal(p.busy(afterHold()), true, 'as long as they wait, not only for a hold');
    assert.equal(p.waiting, BUSY_COMMITTING);
  });

  it(`stays busy ${BUSY_HOLD_MS} ms after the waiting requests were answered, then is quiet`, () => {
    const p = new IngressPressure();
    for (let i = 0; i < BUSY_COMMITTING; i++) p.commitStarted();
    for (let i = 0; i < BUSY_COMMITTING; i++) p.committed(); // one batch's answers: the count falls at once
    const now = performance.now();
    assert.equal(p.waiting, 0);
    assert.equal(p.busy(now), true, 'the next requests refill the queue a round trip later');
    assert.equal(p.busy(now + BUSY_HOLD_MS + 1), false, 'quiet once the hold passed');
  });

  it('is never busy with fewer waiting than the threshold: a real rate keeps one to three', () => {
    const p = new IngressPressure();
    for (let round = 0; round < 100; round++) {
      for (let i = 0; i < BUSY_COMMITTING - 1; i++) p.commitStarted();
      assert.equal(p.busy(), false);
      for (let i = 0; i < BUSY_COMMITTING - 1; i++) p.committed();
      assert.equal(p.busy(), false);
    }
  });
});
