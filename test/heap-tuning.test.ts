/**
 * The service's V8 memory settings (src/heap-tuning.ts, `npm start`, the systemd unit): set where they take effect,
 * an operator's own flag wins, and the old generation really stays near its live size.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { tuneHeapForService } from '../src/heap-tuning.js';
import { fromRoot } from './support/paths.js';

/**
 * Old space (MiB) at its largest while a window of 600,000 small objects is replaced one by one: each outlives two
 * young-generation GCs and dies in the old space (the pattern of a busy service's in-flight work). About 1 s.
 */
function peakOldSpace(tune: boolean): number {
  const code = `
    import { getHeapSpaceStatistics } from 'node:v8';
    ${tune ? `const { tuneHeapForService } = await import(${JSON.stringify(pathToFileURL(fromRoot('dist/heap-tuning.js')).href)}); tuneHeapForService([], '');` : ''}
    let peak = 0; const win = new Array(600000);
    for (let i = 0; i < 6e6; i++) {
      win[i % 600000] = { i, s: 'x' + i };
      if (i % 20000 === 0) peak = Math.max(peak, getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_size);
    }
    console.log(peak / 1048576);`;
  return Number(
    execFileSync(process.execPath, ['--input-type=module', '-e', code], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    }).trim(),
  );
}

describe('heap tuning (hookgate serve)', () => {
  it("keeps an operator's own --heap-growing-percent (node flag or NODE_OPTIONS)", () => {
    assert.equal(tuneHeapForService(['--heap-growing-percent=50'], ''), false);
    assert.equal(tuneHeapForService([], '--max-old-space-size=512 --heap_growing_percent=50'), false);
  });

  it('keeps the old generation near its live size where V8 alone lets it grow several times over', () => {
    const plain = peakOldSpace(false);
    const tuned = peakOldSpace(true);
    assert.ok(tuned < plain * 0.6, `old space peak: tuned ${tuned.toFixed(1)} MiB, default ${plain.toFixed(1)} MiB`);
  });

  it('npm start and the systemd unit run node with the same --max-semi-space-size and MALLOC_ARENA_MAX (both read at start)', () => {
    const start = JSON.parse(readFileSync(fromRoot('package.json'), 'utf8')).scripts.start as string;
    const unit = readFileSync(fromRoot('examples/systemd/hookgate.service'), 'utf8');
    assert.match(start, /^MALLOC_ARENA_MAX=1 node --max-semi-space-size=4 dist\/cli\/main\.js serve$/);
    assert.match(unit, /^Environment=MALLOC_ARENA_MAX=1$/m);
    assert.match(
      unit,
      /^ExecStart=\/usr\/bin\/node --max-semi-space-size=4 \/opt\/hookgate\/dist\/cli\/main\.js serve /m,
    );
  });
});
