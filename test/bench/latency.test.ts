import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromRoot } from '../support/paths.js';

interface Verdict {
  target: string;
  value: number;
  floor: number | undefined;
  contract: number | undefined;
  ok: boolean;
  beyond: boolean;
}
type RoundName = 'bare' | 'floor' | 'contractWake' | 'wake' | 'contractAgent' | 'agent';
const { latencyVerdicts, ROUND_NAMES } = (await import(fromRoot('bench/latency.mjs'))) as {
  latencyVerdicts: (rounds: Array<{ target: string; fraction: number; p99: number }>) => Verdict[];
  ROUND_NAMES: Record<RoundName, string>;
};

/** One round per target and fraction, with the p99s given in ms; a target left out has no round. */
function rounds(byFraction: Record<number, Partial<Record<RoundName, number>>>) {
  return Object.entries(byFraction).flatMap(([fraction, p99s]) =>
    Object.entries(p99s).map(([name, p99]) => ({
      target: ROUND_NAMES[name as RoundName],
      fraction: Number(fraction),
      p99: p99!,
    })),
  );
}

const byTarget = (vs: Verdict[]) => Object.fromEntries(vs.map((v) => [v.target, v]));
const all = (
  bare: number,
  floor: number,
  contractWake: number,
  wake: number,
  contractAgent: number,
  agent: number,
) => ({
  bare,
  floor,
  contractWake,
  wake,
  contractAgent,
  agent,
});

describe('bench/latency.mjs verdicts', () => {
  it('judges each target on hookgate and, at the same rate, on the contract floor of its kind', () => {
    const v = byTarget(latencyVerdicts(rounds({ 0.25: all(2, 3, 3.5, 3.9, 4, 5), 0.5: all(2.5, 4, 4.5, 6, 8, 12) })));
    assert.deepEqual(v['wake p99 ≤ 2× bare p99 at 25 %'], {
      target: 'wake p99 ≤ 2× bare p99 at 25 %',
      value: 1.95,
      floor: 1.5,
      contract: 1.75,
      ok: true,
      beyond: false,
    });
    const at50 = v['wake p99 ≤ 2× bare p99 at 50 %']!;
    assert.equal(at50.value, 2.4);
    assert.deepEqual([at50.ok, at50.beyond], [false, false], 'missed where the contract floor meets it');
    assert.deepEqual([v['wake p99 ≤ 5 ms at 50 %']!.ok, v['wake p99 ≤ 5 ms at 50 %']!.beyond], [false, false]);
    const agent = v['agent p99 ≤ 10 ms at 50 %']!;
    assert.deepEqual([agent.value, agent.floor, agent.contract, agent.ok, agent.beyond], [12, 4, 8, false, false]);
  });

  it('marks a target beyond only when the contract floor of its kind misses it too', () => {
    // The contract floor's wake meets every wake target; its agent misses the agent's.
    const v = byTarget(latencyVerdicts(rounds({ 0.5: all(2, 3, 3.9, 30, 11, 40) })));
    for (const target of ['wake p99 ≤ 2× bare p99 at 50 %', 'wake p99 ≤ 5 ms at 50 %'])
      assert.deepEqual([v[target]!.ok, v[target]!.beyond], [false, false], target);
    const agent = v['agent p99 ≤ 10 ms at 50 %']!;
    assert.deepEqual([agent.ok, agent.beyond, agent.contract], [false, true, 11]);
    // The floor alone missing is not enough: it does less than the contract asks.
    const w = byTarget(latencyVerdicts(rounds({ 0.5: all(2, 11, 4, 30, 9, 40) })))['wake p99 ≤ 5 ms at 50 %']!;
    assert.deepEqual([w.ok, w.beyond, w.floor], [false, false, 11]);
  });

  it('never calls a target beyond without a contract floor round to judge it on', () => {
    const v = byTarget(latencyVerdicts(rounds({ 0.5: { bare: 2, floor: 11, wake: 30, agent: 40 } })));
    for (const t of Object.values(v))
      assert.deepEqual([t.ok, t.beyond, t.contract], [false, false, undefined], t.target);
  });
});
