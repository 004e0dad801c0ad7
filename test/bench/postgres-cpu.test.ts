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
interface Phase {
  rows: Record<'floor' | 'floorPg' | 'sqlite' | 'postgres', { pgCpuPerReq: number }>;
  ratios: { hookgate: number[]; floor: number[] };
}
const { postgresVerdicts } = (await import(fromRoot('bench/postgres-cpu.mjs'))) as {
  postgresVerdicts: (saturated: Phase, atRate: Phase, rate: number) => Verdict[];
};

/** A phase whose rounds had these CPU ratios, and these PostgreSQL CPU figures per wake. */
function phase(hookgate: number[], floor: number[], pg = { postgres: 30, floorPg: 15 }): Phase {
  const row = (pgCpuPerReq: number) => ({ pgCpuPerReq });
  return {
    rows: { floor: row(0), floorPg: row(pg.floorPg), sqlite: row(0), postgres: row(pg.postgres) },
    ratios: { hookgate, floor },
  };
}

describe('bench/postgres-cpu.mjs verdicts', () => {
  it('judges the CPU ratio on the rounds at one rate (median), not on the saturated ones', () => {
    const [ratio] = postgresVerdicts(
      phase([1.9, 1.9, 1.9], [1.0, 1.0, 1.0]),
      phase([0.7, 1.3, 0.9], [0.6, 0.6, 0.6]),
      5000,
    );
    assert.equal(ratio!.value, 0.9);
    assert.equal(ratio!.floor, 0.6);
    assert.equal(ratio!.ok, true);
    assert.match(ratio!.target, /at 5000 wakes\/s/);
  });

  it('a ratio over 1.2 is a miss, or beyond the floor when the floors’ ratio is over 1.2 too', () => {
    const sat = phase([1, 1, 1], [1, 1, 1]);
    const [miss] = postgresVerdicts(sat, phase([1.3, 1.3, 1.3], [1.1, 1.1, 1.1]), 5000);
    assert.deepEqual([miss!.ok, miss!.beyond], [false, false]);
    const [beyond] = postgresVerdicts(sat, phase([1.3, 1.3, 1.3], [1.25, 1.25, 1.25]), 5000);
    assert.deepEqual([beyond!.ok, beyond!.beyond], [false, true]);
  });

  it("judges PostgreSQL's own CPU per wake on the saturated rounds, against 40 µs", () => {
    const at = phase([1, 1, 1], [1, 1, 1], { postgres: 10, floorPg: 5 });
    const [, met] = postgresVerdicts(phase([1], [1], { postgres: 40, floorPg: 15 }), at, 5000);
    assert.deepEqual([met!.value, met!.ok, met!.beyond], [40, true, false]);
    const [, over] = postgresVerdicts(phase([1], [1], { postgres: 41, floorPg: 42 }), at, 5000);
    assert.deepEqual([over!.ok, over!.beyond], [false, true]);
  });
});
