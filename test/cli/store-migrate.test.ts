/**
 * Only `serve` and `hookgate store migrate` change a store's schema (docs/operations.md, "Upgrading"): every other
 * command, the writers among them, refuses an older store without touching it, and every command (serve included)
 * refuses a store written by a newer hookgate. Run with the real binary, on SQLite and on a PostgreSQL database of
 * its own (skipped without PostgreSQL, failed under HOOKGATE_REQUIRE_SERVICES=1).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { PG_MIGRATIONS, PG_VERSION_TABLE } from '../../src/store/postgres-schema.js';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite-schema.js';
import { createTestDatabase, skipWithoutPostgres, type TestDatabase } from '../support/pg-database.js';
import { CLI, runCli, TOKEN } from '../support/server.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

/** The schema an older hookgate left: SQLite's seventh step (the probe's store), PostgreSQL's third. */
const OLD = 7;
const PG_OLD = 3;
const SQLITE_KNOWN = SQLITE_MIGRATIONS.length;
const PG_KNOWN = PG_MIGRATIONS.length;

/** Every command that opens the store, readers and writers alike (none of them may migrate). */
const STORE_COMMANDS: string[][] = [
  ['status'],
  ['runs', 'list'],
  ['runs', 'show', 'r-1'],
  ['runs', 'retry', 'r-1'],
  ['sessions', 'list'],
  ['sessions', 'show', 'main'],
  ['sessions', 'route', 'main', '--channel', 'log', '--to', 'ops'],
  ['deliveries', 'list'],
  ['deliveries', 'retry', 'd-1'],
  ['received'],
  ['audit'],
  ['nodes'],
];

function writeConfig(dir: string, storage: Record<string, unknown>): string {
  const file = join(dir, 'hookgate.json5');
  writeFileSync(
    file,
    JSON.stringify({
      gateway: { port: 0 },
      admin: { enabled: false },
      storage,
      hooks: { enabled: true, token: TOKEN },
    }),
  );
  return file;
}

/** `serve` run to its exit; killed (and reported as such) if it is still running after 60 s: it should have refused. */
function serveUntilExit(config: string, cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, 'serve', '--config', config], {
      cwd,
      env: { ...process.env, HOOKGATE_TOKEN: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    const killer = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, output });
    });
  });
}

/** Each command exits 1 saying `message`; `check` looks at the store after each one (left as it was). */
async function assertRefused(
  commands: string[][],
  config: string,
  cwd: string,
  message: RegExp,
  check: (args: string[]) => unknown = () => {},
): Promise<void> {
  for (const args of commands) {
    const r = await runCli([...args, '--config', config], { cwd });
    assert.equal(r.code, 1, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
    await check(args);
  }
}

async function assertServeRefuses(config: string, cwd: string, message: RegExp): Promise<void> {
  const serve = await serveUntilExit(config, cwd);
  assert.equal(serve.code, 1, serve.output);
  assert.match(serve.output, message);
}

const OUTDATED = (found: number, known: number) =>
  new RegExp(
    `is at schema ${found}; this hookgate needs ${known}: run \`hookgate store migrate\` or start the service`,
  );
const NEWER = (found: number, known: number) =>
  new RegExp(`was written by a newer hookgate \\(schema ${found}\\); this one knows up to ${known}: upgrade hookgate`);

describe('cli: store schema on SQLite', () => {
  let dir: string;
  let config: string;
  const path = () => join(dir, 'data/hookgate.db');
  const version = () => {
    const db = new Database(path(), { readonly: true });
    try {
      return Number(db.pragma('user_version', { simple: true }));
    } finally {
      db.close();
    }
  };
  /** A store as the hookgate of schema `v` left it (the schema code's first `v` steps). */
  const makeStore = (v: number) => {
    removeDir(join(dir, 'data'));
    mkdirSync(join(dir, 'data'), { mode: 0o700 });
    const db = new Database(path());
    db.pragma('journal_mode = WAL');
    for (let i = 0; i < Math.min(v, SQLITE_KNOWN); i++) db.exec(SQLITE_MIGRATIONS[i]!);
    db.pragma(`user_version = ${v}`);
    db.close();
  };

  before(() => {
    dir = tempDir();
    config = writeConfig(dir, { driver: 'sqlite', path: './data/hookgate.db' });
  });
  after(() => removeDir(dir));

  it('an older store: every command but serve and store migrate refuses it, naming both, and leaves it as it was', async () => {
    makeStore(OLD);
    await assertRefused(STORE_COMMANDS, config, dir, OUTDATED(OLD, SQLITE_KNOWN), (args) =>
      assert.equal(version(), OLD, `${args.join(' ')} migrated the store`),
    );
  });

  it('store migrate: brings it to this schema, then has nothing to do; status reads it', async () => {
    makeStore(OLD);
    const r = await runCli(['store', 'migrate', '--config', config], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `migrated the store from schema ${OLD} to ${SQLITE_KNOWN}\n`);
    assert.equal(version(), SQLITE_KNOWN);
    const again = await runCli(['store', 'migrate', '--json', '--config', config], { cwd: dir });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(JSON.parse(again.stdout), { ok: true, from: SQLITE_KNOWN, to: SQLITE_KNOWN, migrated: false });
    const status = await runCli(['status', '--config', config], { cwd: dir });
    assert.equal(status.code, 0, status.stderr);
  });

  it('store migrate creates no store where there is none', async () => {
    removeDir(join(dir, 'data'));
    const r = await runCli(['store', 'migrate', '--config', config], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no store at .*hookgate serve --config/);
  });

  it('a newer store: every command refuses it, store migrate and serve included', async () => {
    makeStore(SQLITE_KNOWN + 1);
    await assertRefused([...STORE_COMMANDS, ['store', 'migrate']], config, dir, NEWER(SQLITE_KNOWN + 1, SQLITE_KNOWN));
    await assertServeRefuses(config, dir, NEWER(SQLITE_KNOWN + 1, SQLITE_KNOWN));
    assert.equal(version(), SQLITE_KNOWN + 1);
  });

  it('serve migrates an older store at start', async () => {
    makeStore(OLD);
    const serve = spawn(process.execPath, [CLI, 'serve', '--config', config], {
      cwd: dir,
      env: { ...process.env, HOOKGATE_TOKEN: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        let out = '';
        serve.stdout.setEncoding('utf8').on('data', (d: string) => {
          out += d;
          if (out.includes('hookgate listening')) resolve();
        });
        serve.once('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
      });
      assert.equal(version(), SQLITE_KNOWN);
    } finally {
      const exited = new Promise((resolve) => serve.once('close', resolve));
      serve.kill('SIGTERM');
      await exited;
    }
  });
});

describe('cli: store schema on PostgreSQL', async () => {
  const skip = await skipWithoutPostgres();
  let dir: string;
  let config: string;
  let db: TestDatabase;
  const version = async () =>
    Number((await db.query<{ v: number }>('SELECT max(version) AS v FROM schema_migrations'))[0]!.v);
  /** The database as the hookgate of schema `v` left it. */
  const makeSchema = async (v: number) => {
    await db.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    await db.query(PG_VERSION_TABLE);
    for (let i = 0; i < Math.min(v, PG_KNOWN); i++) await db.query(PG_MIGRATIONS[i]!);
    await db.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [v]);
  };

  before(async () => {
    if (skip) return;
    dir = tempDir();
    db = await createTestDatabase();
    config = writeConfig(dir, { driver: 'postgres', url: db.url, poolSize: 2 });
  });
  after(async () => {
    if (skip) return;
    removeDir(dir);
    await db.drop();
  });

  it('an older schema: readers and writers refuse it and leave it as it was; store migrate migrates it', {
    skip,
  }, async () => {
    await makeSchema(PG_OLD);
    const commands = [
      ['status'],
      ['runs', 'list'],
      ['sessions', 'route', 'main', '--channel', 'log', '--to', 'ops'],
      ['audit'],
    ];
    await assertRefused(commands, config, dir, OUTDATED(PG_OLD, PG_KNOWN), async (args) =>
      assert.equal(await version(), PG_OLD, `${args.join(' ')} migrated the schema`),
    );
    const r = await runCli(['store', 'migrate', '--config', config], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `migrated the store from schema ${PG_OLD} to ${PG_KNOWN}\n`);
    assert.equal(await version(), PG_KNOWN);
    const status = await runCli(['status', '--config', config], { cwd: dir });
    assert.equal(status.code, 0, status.stderr);
  });

  it('a newer schema: every command refuses it, serve included', { skip }, async () => {
    await makeSchema(PG_KNOWN);
    await db.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 0)', [PG_KNOWN + 1]);
    await assertRefused(
      [['status'], ['runs', 'list'], ['store', 'migrate']],
      config,
      dir,
      NEWER(PG_KNOWN + 1, PG_KNOWN),
    );
    await assertServeRefuses(config, dir, NEWER(PG_KNOWN + 1, PG_KNOWN));
  });
});
