/** `hookgate doctor`: the SQLite driver's native module, loaded or not, with what to do. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nativeFinding, probeNative, REBUILD_FIX } from '../../src/cli/doctor-native.js';

describe('cli: doctor, the SQLite native module', () => {
  it("here it loads: its version, SQLite's, the Node ABI, and how it was built", () => {
    const state = probeNative();
    assert.equal(state.error, undefined);
    const f = nativeFinding(state, true);
    assert.equal(f.status, 'ok');
    assert.match(
      f.detail,
      new RegExp(
        `^better-sqlite3 \\d+\\.\\d+\\.\\d+ loads \\(SQLite 3\\.\\d+\\.\\d+; Node ${process.version.replace(/\./g, '\\.')}, module ABI ${process.versions.modules}; (compiled here from source|prebuilt binary)\\)$`,
      ),
    );
  });

  it('one built for another Node (ERR_DLOPEN_FAILED) or never built: fail with the rebuild, or a warning on PostgreSQL', () => {
    const abi = nativeFinding({ version: '12.0.0', fromSource: false, error: { code: 'ERR_DLOPEN_FAILED' } }, true);
    assert.equal(abi.status, 'fail');
    assert.match(abi.detail, /ERR_DLOPEN_FAILED.*another Node/);
    assert.equal(abi.fix, REBUILD_FIX);
    assert.match(REBUILD_FIX, /npm rebuild better-sqlite3.*python3, make and a C\+\+ compiler/);
    const notBuilt = nativeFinding({ version: '12.0.0', fromSource: false, error: { code: 'NOT_BUILT' } }, false);
    assert.equal(notBuilt.status, 'warn');
    assert.match(notBuilt.detail, /was not built/);
    assert.equal(nativeFinding({ error: { code: 'MODULE_NOT_FOUND' } }, true).fix, 'npm ci in the checkout');
  });
});
