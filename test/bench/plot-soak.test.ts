import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromRoot } from '../support/paths.js';

const { soakSamples, plotSoak } = (await import(fromRoot('bench/plot-soak.mjs'))) as {
  soakSamples: (text: string) => number[][];
  plotSoak: (rows: number[][], title: string) => string;
};

const HEAD =
  '| t s | store MiB | WAL MiB | RSS MiB | received blocks | events written | events pending | runs written | WAL high-water MiB (≤) |';

describe('bench/plot-soak.mjs', () => {
  it('reads the time, the store, the sampled WAL and its high-water mark from the soak table', () => {
    const text = [
      'hookgate retention soak: /hooks/wake 900/s + /hooks/agent 100/s for 3600 s',
      HEAD,
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      '| 3 | 2604.7 | 4.0 | 80.1 | 10 | 2000 | 3 | 100 | 16.0 |',
      '| 13 | 2604.8 | 8.0 | 81.0 | 20 | 12000 | 0 | 1100 | 32.0 |',
      '| target | measured | met |',
    ].join('\n');
    assert.deepEqual(soakSamples(text), [
      [3, 2604.7, 4, 16],
      [13, 2604.8, 8, 32],
    ]);
  });

  it('finds its columns by their header, wherever the soak puts them', () => {
    const text = [
      '| t s | free pages MiB | WAL high-water MiB (≤) | RSS MiB | WAL MiB | store MiB |',
      '|---:|---:|---:|---:|---:|---:|',
      '| 3 | 420.5 | 16.1 | 80.1 | 4.3 | 2692.8 |',
    ].join('\n');
    assert.deepEqual(soakSamples(text), [[3, 2692.8, 4.3, 16.1]]);
  });

  it('reads an older table without the high-water column, and plots it without the dashed line', () => {
    const rows = soakSamples(
      '| 3 | 100.0 | 4.0 | 80.1 | 10 | 2000 | 3 | 100 |\n| 13 | 101.0 | 8.0 | 81.0 | 20 | 12000 | 0 | 1100 |',
    );
    assert.equal(rows.length, 2);
    assert.ok(Number.isNaN(rows[0]![3]));
    const svg = plotSoak(rows, 't');
    assert.doesNotMatch(svg, /high-water/);
    assert.equal((svg.match(/<path /g) ?? []).length, 2);
  });

  it('draws the high-water mark dashed in the WAL panel, on the same axis as the sampled WAL', () => {
    const svg = plotSoak(
      [
        [0, 100, 4, 16],
        [600, 100, 8, 40],
      ],
      't',
    );
    assert.match(svg, /high-water mark/);
    assert.equal((svg.match(/<path /g) ?? []).length, 3);
    // The WAL axis reaches the high-water mark (40), not only the sampled WAL (8).
    assert.match(svg, />40</);
  });
});
