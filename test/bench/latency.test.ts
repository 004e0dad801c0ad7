import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromRoot } from '../support/paths.js';

interface Verdict {
  target: string;
  value: number;
  floor: number;
  ok: boolean;
  beyond: boolean;
}
const { latencyVerdicts, ROUND_NAMES } = (await import(fromRoot('bench/latency.mjs'))) as {
  latencyVerdicts: (rounds: Array<{ target: string; fraction: number; p99: number }>) => Verdict[];
  ROUND_NAMES: Record<'bare' | 'floor' | 'wake' | 'agent', string>;
};

/** One round per target and fraction, with the p99s given in ms: [bare, floor, wake, agent]. */
function rounds(byFraction: Record<number, [number, number, number, number]>) {
  const names = [ROUND_NAMES.bare, ROUND_NAMES.floor, ROUND_NAMES.wake, ROUND_NAMES.agent];
  return Object.entries(byFraction).flatMap(([fraction, p99s]) =>
    p99s.map((p99, i) => ({ target: names[i]!, fraction: Number(fraction), p99 })),
  );
}

const byTarget = (vs: Verdict[]) => Object.fromEntries(vs.map((v) => [v.target, v]));

describe('bench/latency.mjs verdicts', () => {
  it('judges each target on hookgate and, at the same rate, on the floor', () => {
    const v = byTarget(latencyVerdicts(rounds({ 0.25: [2, 3, 3.9, 5], 0.5: [2.5, 4, 6, 12] })));
    assert.deepEqual(v['wake p99 ≤ 2× bare p99 at 25 %'], {
      target: 'wake p99 ≤ 2× bare p99 at 25 %',
      value: 1.95,
      floor: 1.5,
      ok: true,
      beyond: false,
    });
    const at50 = v['wake p99 ≤ 2× bare p99 at 50 %']!;
    assert.equal(at50.value, 2.4);
    assert.deepEqual([at50.ok, at50.beyond], [false, false], 'missed where the floor meets it');
    assert.deepEqual([v['wake p99 ≤ 5 ms at 50 %']!.ok, v['wake p99 ≤ 5 ms at 50 %']!.beyond], [false, false]);
    assert.deepEqual([v['agent p99 ≤ 10 ms at 50 %']!.ok, v['agent p99 ≤ 10 ms at 50 %']!.beyond], [false, false]);
  });

  it('marks a target beyond the floor only when the floor misses it too', () => {
    const v = byTarget(latencyVerdicts(rounds({ 0.5: [2, 11, 30, 40] })));
    for (const target of ['wake p99 ≤ 2× bare p99 at 50 %', 'wake p99 ≤ 5 ms at 50 %', 'agent p99 ≤ 10 ms at 50 %']) {
      assert.equal(v[target]!.ok, false, target);
      assert.equal(v[target]!.beyond, true, target);
    }
    assert.equal(v['agent p99 ≤ 10 ms at 50 %']!.floor, 11);
  });
});
