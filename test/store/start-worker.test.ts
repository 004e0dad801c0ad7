/**
 * Workers get the V8 young generation they declare (src/store/start-worker.ts), also in a process started with
 * `--max-semi-space-size` (`npm start`, the systemd unit), whose flag would otherwise size every worker's as the main
 * thread's: 2 × 4 MiB of semi-spaces, resident once used, against the 1 MiB the read and checkpoint threads declare.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { fromRoot } from '../support/paths.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

/** A worker that fills its young generation several times over, then posts its new space's size in MiB. */
const CHURN = `const { parentPort } = require('node:worker_threads');
const { getHeapSpaceStatistics } = require('node:v8');
let keep = [];
for (let i = 0; i < 2e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 5000) keep = []; }
parentPort.postMessage(getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576);`;

describe('startWorker', () => {
  let dir: string;
  before(() => {
    dir = tempDir();
    writeFileSync(join(dir, 'churn.js'), CHURN);
  });
  after(() => removeDir(dir));

  /** The new space (MiB) of a worker started with `limits`, in a node run with `flags`. */
  function workerNewSpace(flags: string[], limits: object): number {
    const code = `
      const { startWorker } = await import(${JSON.stringify(pathToFileURL(fromRoot('dist/store/start-worker.js')).href)});
      const w = startWorker('./churn', ${JSON.stringify(pathToFileURL(join(dir, 'base.js')).href)}, null, ${JSON.stringify(limits)});
      w.once('message', (mib) => { console.log(mib); void w.terminate(); });`;
    return Number(
      execFileSync(process.execPath, [...flags, '--input-type=module', '-e', code], {
        encoding: 'utf8',
        env: { ...process.env, NODE_OPTIONS: '' },
      }).trim(),
    );
  }

  it("gives a worker its declared young generation, not the main thread's --max-semi-space-size", () => {
    const small = workerNewSpace(['--max-semi-space-size=4'], { maxYoungGenerationSizeMb: 1 });
    // With the flag left set, the worker's new space is the main thread's: 8 MiB.
    assert.ok(small <= 2, `worker new space ${small} MiB with maxYoungGenerationSizeMb 1`);
  });
});
