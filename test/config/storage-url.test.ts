/**
 * `storage.url` of the postgres driver is a secret like the others (`{ env }`, `{ file }`, `${VAR}`), is
 * checked as a PostgreSQL URL with problems by key path, and never appears (its password) in a message.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { databaseUrlProblem, scrubUrlSecrets } from '../../src/config/database-url.js';
import { safeUrl } from '../../src/text-safe.js';
import { loadStorageConfig } from '../../src/config/load.js';
import { removeDir, tempDir } from '../support/temp-dir.js';
import { assertIssue, issuesOf, parse } from './helpers.js';

const URL_WITH_PASSWORD = 'postgres://hookgate:s3cr%40t-Pa55@db.internal:5432/hookgate';
const pg = (url: unknown, extra: Record<string, unknown> = {}) => ({ storage: { driver: 'postgres', url, ...extra } });

describe('storage.url: secret forms', () => {
  const dir = tempDir();
  after(() => removeDir(dir));

  it('{ env: "DATABASE_URL" } reads the variable', () => {
    const c = parse(pg({ env: 'DATABASE_URL' }), { DATABASE_URL: URL_WITH_PASSWORD });
    assert.equal(c.storage.driver === 'postgres' && c.storage.url, URL_WITH_PASSWORD);
  });

  it('an unset variable is one problem at storage.url, naming the variable', () => {
    assertIssue(pg({ env: 'DATABASE_URL' }), 'storage.url', 'environment variable DATABASE_URL is not set');
  });

  it('{ file } reads the file (trimmed), relative to the config directory', () => {
    writeFileSync(join(dir, 'db-url'), `${URL_WITH_PASSWORD}\n`);
    const c = parse(pg({ file: 'db-url' }), {}, dir);
    assert.equal(c.storage.driver === 'postgres' && c.storage.url, URL_WITH_PASSWORD);
  });

  it('${VAR} inside the string (the password alone from the environment)', () => {
    const c = parse(pg('postgresql://hookgate:${PGPASS}@db/hookgate'), { PGPASS: 'x%2Fy' });
    assert.equal(c.storage.driver === 'postgres' && c.storage.url, 'postgresql://hookgate:x%2Fy@db/hookgate');
  });

  it('the storage-only load of the read commands resolves the same forms', () => {
    const file = join(dir, 'hookgate.json5');
    writeFileSync(file, JSON.stringify(pg({ env: 'DATABASE_URL' }, { poolSize: 4 })));
    const s = loadStorageConfig(file, { DATABASE_URL: URL_WITH_PASSWORD }, dir);
    assert.deepEqual(s.storage, { driver: 'postgres', url: URL_WITH_PASSWORD, poolSize: 4 });
  });
});

describe('storage.url: what makes it valid', () => {
  it('postgres:// and postgresql:// with a host and a database; a Unix socket through ?host=', () => {
    for (const url of [
      'postgres://u@h/db',
      'postgresql://u:p@127.0.0.1:5432/test',
      'postgres://[::1]/db',
      'postgres:///db?host=/run/postgresql',
    ]) {
      assert.equal(databaseUrlProblem(url), undefined, url);
      parse(pg(url));
    }
  });

  for (const [name, url, message] of [
    ['another scheme', 'mysql://u:p@h/db', /must start with postgres:\/\/ or postgresql:\/\/ \(got "mysql:\/\/"\)/],
    ['no scheme', 'db.internal:5432/hookgate', /must start with postgres:\/\/ or postgresql:\/\//],
    [
      'not a URL',
      'host=db user=hookgate',
      /must be a PostgreSQL URL like postgres:\/\/user:password@host:5432\/database/,
    ],
    ['no host', 'postgres:///hookgate', /names no host/],
    ['no database', 'postgres://u:p@db.internal:5432', /names no database: add "\/<database>" after the host/],
    ['no database (trailing slash)', 'postgres://u:p@db.internal/', /names no database/],
    ['a bad port', 'postgres://u:p@db.internal:99999/db', /must be a PostgreSQL URL/],
  ] as const) {
    it(`${name} → storage.url, with what to write`, () => {
      assertIssue(pg(url), 'storage.url', message);
    });
  }

  it('poolSize: a positive integer, default 10', () => {
    assert.deepEqual(parse(pg('postgres://u@h/db')).storage, {
      driver: 'postgres',
      url: 'postgres://u@h/db',
      poolSize: 10,
    });
    assertIssue(pg('postgres://u@h/db', { poolSize: 0 }), 'storage.poolSize');
    assertIssue(pg('postgres://u@h/db', { poolSize: 2.5 }), 'storage.poolSize');
  });

  it('no problem message quotes the password, whatever is wrong', () => {
    for (const url of [
      'mysql://u:hunter2-pw@h/db',
      'postgres://u:hunter2-pw@h',
      'postgres://u:hunter2-pw@:5/db',
      'hunter2-pw',
    ]) {
      const issues = issuesOf(pg(url, { poolSize: -1 }));
      assert.ok(issues.length > 0);
      assert.doesNotMatch(JSON.stringify(issues), /hunter2/, url);
    }
  });
});

describe('showing a database URL', () => {
  it('masks the password (user part) and every parameter value', () => {
    assert.equal(safeUrl(URL_WITH_PASSWORD), 'postgres://hookgate:***@db.internal:5432/hookgate');
    assert.equal(safeUrl('postgres://u@h/db?password=x&sslmode=require'), 'postgres://u@h/db?password=***&sslmode=***');
    assert.equal(safeUrl('postgres://u@h/db'), 'postgres://u@h/db');
    assert.equal(safeUrl('postgres:///db?host=/run/postgresql'), 'postgres:///db?host=***');
    assert.doesNotMatch(safeUrl('::not a url hunter2'), /hunter2/);
  });

  it('scrubs the password (raw and decoded) out of a driver message', () => {
    const msg = `connect to ${URL_WITH_PASSWORD} failed: password "s3cr@t-Pa55" rejected (s3cr%40t-Pa55)`;
    const out = scrubUrlSecrets(msg, URL_WITH_PASSWORD);
    assert.doesNotMatch(out, /s3cr/);
    assert.match(out, /postgres:\/\/hookgate:\*\*\*@db\.internal:5432\/hookgate/);
  });
});
