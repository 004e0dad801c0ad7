/**
 * `hookgate connect` from a fresh directory to a run in the store: `hookgate init`, `hookgate connect github`, the real
 * server started on that config, then `hookgate connect github --test` twice: each sample is signed with the secret
 * connect made, answered 2xx, shown as the agent receives it, and queued as a run of its own (a fresh delivery id: the
 * second is no duplicate); and Linear, whose signed body carries its send time. Runs on SQLite, and on PostgreSQL
 * with HOOKGATE_TEST_STORE=postgres. `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/pg-database.js';
import { type Hookgate, runCli, startHookgate, testStoreKind } from '../support/server.js';
import { withStoreAt } from '../support/store-at.js';
import { tempDir } from '../support/temp-dir.js';

describe('e2e: hookgate connect github, then --test through the running service', { timeout: 120_000 }, () => {
  let dir: string;
  let hg: Hookgate;
  let db: TestDatabase | undefined;
  let secret: string;

  before(async () => {
    dir = tempDir('hookgate-e2e-connect-');
    const init = await runCli(['init'], { cwd: dir });
    assert.equal(init.code, 0, init.stderr);
    const connect = await runCli(['connect', 'github'], { cwd: dir });
    assert.equal(connect.code, 0, connect.stderr);
    secret = readFileSync(join(dir, 'data/github-webhook-secret'), 'utf8').trim();
    assert.ok(connect.stdout.includes(`\n  ${secret}\n`), 'connect printed the secret to paste into GitHub');
    // Linear signs its send time in the body: its sample must be sent with the test's own time, or be refused as stale.
    const linear = await runCli(['connect', 'linear', '--secret-file', '-'], {
      cwd: dir,
      input: 'lin_wh_0123456789abcdef',
    });
    assert.equal(linear.code, 0, linear.stderr);

    // The config connect wrote, on a port of the system's choosing (--test is given the URL) and on the store under test.
    let text = readFileSync(join(dir, 'hookgate.json5'), 'utf8').replace('port: 18789', 'port: 0');
    if (testStoreKind() === 'postgres') {
      db = await createTestDatabase();
      text = text.replace(/storage: \{[^}]*\}/, `storage: { driver: "postgres", url: ${JSON.stringify(db.url)} }`);
    }
    hg = await startHookgate({ dir, config: text, ...(db ? { database: db } : {}) });
  });
  after(async () => {
    await hg?.cleanup();
    await db?.drop();
  });

  const test = async (sender = 'github') => {
    const r = await runCli(['connect', sender, '--test', '--url', hg.url], { cwd: dir });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), 'the test never prints the secret');
    const answer = /^answer: (\d{3}) (.*)$/m.exec(r.stdout);
    assert.ok(answer, r.stdout);
    assert.match(answer[1]!, /^2\d\d$/);
    return { stdout: r.stdout, body: JSON.parse(answer[2]!) as { ok: boolean; runId?: string; duplicate?: boolean } };
  };

  it('the sample is answered 2xx, its words shown, and a run queued; a second --test is a run of its own', async () => {
    const first = await test();
    assert.match(
      first.stdout,
      /sent GitHub's sample issues event to http:\/\/127\.0\.0\.1:\d+\/hooks\/github, signed as GitHub signs it/,
    );
    assert.match(first.stdout, /agent run "GitHub" as main in session hook:github:octocat\/Hello-World#1347/);
    assert.match(first.stdout, /message: GitHub issue #1347 opened in octocat\/Hello-World by octocat: Found a bug/);
    assert.equal(typeof first.body.runId, 'string');

    const second = await test();
    assert.notEqual(
      second.body.runId,
      first.body.runId,
      'a fresh delivery id: not deduplicated against the first test',
    );
    assert.equal(second.body.duplicate, undefined);

    await withStoreAt(dir, async (store) => {
      for (const id of [first.body.runId!, second.body.runId!]) {
        const run = await store.getRun(id);
        assert.ok(run, `run ${id} is in the store`);
        assert.equal(run.name, 'GitHub');
        assert.equal(run.sessionKey, 'hook:github:octocat/Hello-World#1347');
        assert.match(run.message, /GitHub issue #1347 opened in octocat\/Hello-World by octocat: Found a bug/);
      }
    });
  });

  it("a sender that signs its send time in the body (Linear) is sent with the test's time, and taken", async () => {
    const r = await test('linear');
    assert.match(r.stdout, /sent Linear's sample Issue\.create event to .*\/hooks\/linear, signed as Linear signs it/);
    assert.equal(typeof r.body.runId, 'string');
    await withStoreAt(dir, async (store) => assert.equal((await store.getRun(r.body.runId!))?.name, 'Linear'));
  });
});
