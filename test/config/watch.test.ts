/**
 * Watching the config file (docs/config.md#reloading): a write, a replacement by rename (how editors save), a
 * symlink swap (how a Kubernetes ConfigMap is updated) and a file removed then written again each call `onChange`
 * once the change settles; other files in the directory (the store's, beside it) do not.
 */
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { watchConfigFile } from '../../src/config/watch.js';
import { tempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('watchConfigFile', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());

  /** Watches `file`; `calls()` counts onChange so far. */
  function watching(file: string) {
    let n = 0;
    stop = watchConfigFile(file, () => n++);
    return { calls: () => n };
  }

  /** A config file `{}` in a fresh directory, watched. */
  function watchedConfig() {
    const dir = tempDir('hookgate-watch-');
    const file = join(dir, 'hookgate.json5');
    writeFileSync(file, '{}');
    return { dir, file, ...watching(file) };
  }

  it('a write to the file calls onChange once the writes settle', async () => {
    const w = watchedConfig();
    const { file } = w;
    writeFileSync(file, '{ a: 1 }');
    writeFileSync(file, '{ a: 2 }');
    await waitFor('a call', () => w.calls() === 1);
    writeFileSync(file, '{ a: 3 }');
    await waitFor('a second call', () => w.calls() === 2);
  });

  it('a file replaced by rename is followed: each later replacement is seen too', async () => {
    const w = watchedConfig();
    const { dir, file } = w;
    for (let i = 1; i <= 3; i++) {
      writeFileSync(join(dir, '.hookgate.json5.tmp'), `{ a: ${i} }`);
      renameSync(join(dir, '.hookgate.json5.tmp'), file);
      await waitFor(`call ${i}`, () => w.calls() === i);
    }
  });

  it('a symlink swap, as a ConfigMap is updated, is seen, and so is the next one', async () => {
    const dir = tempDir('hookgate-watch-');
    const file = join(dir, 'hookgate.json5');
    const version = (n: number) => {
      mkdirSync(join(dir, `v${n}`));
      writeFileSync(join(dir, `v${n}`, 'hookgate.json5'), `{ v: ${n} }`);
      symlinkSync(`v${n}`, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      rmSync(join(dir, `v${n - 1}`), { recursive: true, force: true });
    };
    version(1);
    symlinkSync(join('..data', 'hookgate.json5'), file);
    const w = watching(file);
    version(2);
    await waitFor('the first swap', () => w.calls() === 1);
    version(3);
    await waitFor('the second swap', () => w.calls() === 2);
  });

  it('a file removed and written again later is watched again once it is there', async () => {
    const w = watchedConfig();
    const { file } = w;
    rmSync(file);
    await pause(400);
    assert.equal(w.calls(), 0, 'no call while the path names nothing');
    writeFileSync(file, '{ back: true }');
    await waitFor('a call once it is back', () => w.calls() === 1);
    writeFileSync(file, '{ again: true }');
    await waitFor('the next write seen', () => w.calls() === 2);
  });

  it('other files in the directory do not call it, and stopping ends the calls', async () => {
    const w = watchedConfig();
    const { dir, file } = w;
    for (let i = 0; i < 20; i++) writeFileSync(join(dir, 'hookgate.db-wal'), `frame ${i}`);
    await pause(400);
    assert.equal(w.calls(), 0);
    stop?.();
    writeFileSync(file, '{ a: 1 }');
    await pause(400);
    assert.equal(w.calls(), 0);
  });
});
