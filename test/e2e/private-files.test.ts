/**
 * Private files: a store created through a config file is 0700 (directory) and 0600 (database,
 * -wal, -shm) under umask 022; a store left readable by others is reported at start, once, and left as it is.
 * Run `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { embeddedDefault } from '../../src/config/defaults.js';
import { postWake, startServer } from '../support/runtime-kit.js';
import { tempDir } from '../support/temp-dir.js';

const mode = (p: string) => `0${(statSync(p).mode & 0o777).toString(8)}`;

describe('private files', { timeout: 60_000 }, () => {
  let umask: number;
  before(() => {
    // The server inherits this process's umask: the common default, under which SQLite alone would make 0644 files.
    umask = process.umask(0o022);
  });
  after(() => {
    process.umask(umask);
  });

  it('a store created through a config file: directory 0700, database and its -wal and -shm 0600; an exposed store is reported at start', async () => {
    const hg = await startServer({ storage: { path: './state/nested/hookgate.db' }, heartbeat: { every: 'off' } });
    try {
      await postWake(hg, 'something to write', 'next-heartbeat');
      const db = join(hg.dir, 'state/nested/hookgate.db');
      assert.ok(existsSync(`${db}-wal`) && existsSync(`${db}-shm`), 'the store runs in WAL mode');
      assert.deepEqual([join(hg.dir, 'state'), join(hg.dir, 'state/nested'), db, `${db}-wal`, `${db}-shm`].map(mode), [
        '0700',
        '0700',
        '0600',
        '0600',
        '0600',
      ]);
      assert.ok(
        !hg.logs.some((l) => String(l.msg).includes('readable by group or others')),
        'a fresh store was reported as exposed',
      );
      await hg.stop();

      chmodSync(db, 0o644);
      chmodSync(join(hg.dir, 'state/nested'), 0o755);
      await hg.restart();
      const warnings = hg.logs.filter((l) => String(l.msg).includes('readable by group or others'));
      assert.equal(warnings.length, 1, 'one line for the whole store');
      const msg = String(warnings[0]!.msg);
      assert.equal(warnings[0]!.level, 40, 'a warning');
      assert.ok(msg.includes(`${join(hg.dir, 'state/nested')} (mode 0755)`), msg);
      assert.ok(msg.includes(`${db} (mode 0644)`), msg);
      assert.ok(!msg.includes(`${db}-wal (`), `the -wal file is not exposed: ${msg}`);
      // Reported, not changed: the operator decides (the service still runs).
      assert.equal(mode(db), '0644');
      await postWake(hg, 'still accepted', 'next-heartbeat');
    } finally {
      await hg.cleanup();
    }
  });

  it('the embedded default keeps its generated hook token 0600 in a 0700 ./data', () => {
    const cwd = tempDir('hookgate-token-');
    const def = embeddedDefault(cwd, {});
    const file = join(cwd, 'data/hook-token');
    assert.equal(def.generatedTokenFile, file);
    assert.equal(readFileSync(file, 'utf8').trim(), def.token);
    assert.equal(mode(file), '0600');
    assert.equal(mode(join(cwd, 'data')), '0700');
  });
});
