/**
 * `hookgate config check --connect` opens the store the config names, creating nothing: PostgreSQL (the real
 * server: version and schema state; a closed port: a clear error) and SQLite (the file, or "created at start").
 * Never a password in the output. PostgreSQL cases skip without a server (fail with HOOKGATE_REQUIRE_SERVICES=1).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SqliteStore } from '../../src/store/sqlite.js';
import { runCli } from '../support/server.js';
import { removeDir, tempDir } from '../support/temp-dir.js';
import { PG_URL, postgresSkipReason } from '../support/postgres.js';

const SERVER = PG_URL;
const PASSWORD = 'hunter2-not-needed';

const skip = await postgresSkipReason();

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('cli: config check --connect', () => {
  let dir: string;
  const write = (name: string, storage: Record<string, unknown>) => {
    const file = join(dir, name);
    writeFileSync(file, JSON.stringify({ storage, hooks: { enabled: false } }));
    return file;
  };
  before(() => {
    dir = tempDir();
  });
  after(() => removeDir(dir));

  it('SQLite without a store yet: ok, created at start, and nothing is created', async () => {
    const file = write('sqlite.json5', { path: './data/hookgate.db' });
    const r = await runCli(['config', 'check', '--connect', '--config', file], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /store: ok: no store yet at .*hookgate\.db: `hookgate serve` creates it/);
    assert.match(r.stdout, /sqlite\.json5: ok\n$/);
    assert.equal(existsSync(join(dir, 'data')), false);
  });

  it('SQLite with a store: it opens and is writable (--json: a store list)', async () => {
    mkdirSync(join(dir, 'data'), { mode: 0o700 });
    await new SqliteStore({ path: join(dir, 'data/hookgate.db'), writer: 'inline' }).close();
    const file = write('sqlite.json5', { path: './data/hookgate.db' });
    const r = await runCli(['config', 'check', '--connect', '--json', '--config', file], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { ok: boolean; store: Array<{ what: string; status: string; detail: string }> };
    assert.equal(out.ok, true);
    assert.ok(
      out.store.some((f) => f.what === 'store' && f.status === 'ok' && /opens and is writable/.test(f.detail)),
      r.stdout,
    );
  });

  it('without --connect, a postgres config is validated only (no connection), and the password is not printed', async () => {
    const port = await closedPort();
    const file = write('pg-offline.json5', {
      driver: 'postgres',
      url: `postgres://u:${PASSWORD}@127.0.0.1:${port}/db`,
    });
    const r = await runCli(['config', 'check', '--config', file], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(PASSWORD));
  });

  it('an invalid URL: exit 1 at storage.url, the password not printed', async () => {
    const file = write('pg-bad.json5', { driver: 'postgres', url: `mysql://u:${PASSWORD}@h/db` });
    for (const args of [
      ['config', 'check'],
      ['config', 'check', '--json'],
      ['config', 'check', '--connect'],
    ]) {
      const r = await runCli([...args, '--config', file], { cwd: dir });
      assert.equal(r.code, 1);
      assert.match(r.stdout + r.stderr, /storage\.url/);
      assert.doesNotMatch(r.stdout + r.stderr, new RegExp(PASSWORD));
    }
  });

  it('a closed port: exit 1, the server does not answer, what to check; no password', async () => {
    const port = await closedPort();
    const file = write('pg-closed.json5', { driver: 'postgres', url: { env: 'DATABASE_URL' } });
    const r = await runCli(['config', 'check', '--connect', '--config', file], {
      cwd: dir,
      env: { DATABASE_URL: `postgres://u:${PASSWORD}@127.0.0.1:${port}/db` },
    });
    assert.equal(r.code, 1, r.stdout);
    assert.match(
      r.stdout,
      new RegExp(
        `store: fail: postgres://u:\\*\\*\\*@127\\.0\\.0\\.1:${port}/db: .*ECONNREFUSED.* → check that PostgreSQL runs`,
      ),
    );
    assert.match(r.stdout, /the config is valid, but its store cannot be used/);
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(PASSWORD));
  });

  it('the real server: its version, and the schema state', { skip }, async () => {
    const u = new URL(SERVER);
    u.password = PASSWORD;
    u.searchParams.set('options', '-c search_path=connect_check_empty');
    const file = write('pg.json5', { driver: 'postgres', url: u.toString() });
    const r = await runCli(['config', 'check', '--connect', '--config', file], { cwd: dir });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /store: ok: postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:5432\/test\?options=\S+: PostgreSQL \d+[^;]*; schema: (none yet|current|older)/,
    );
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(PASSWORD));
  });
});
