/**
 * Token rotation against the real server process: several hook tokens and admin tokens (`hooks.tokens`,
 * `admin.tokens`) accepted side by side, the received record naming the token's id (never the token), an expired
 * token refused with 401 like a wrong one, and `hookgate token rotate` while the server runs: its file watch applies
 * the new list at once, the new token works and the old ones keep working until their `notAfter`. Runs on SQLite,
 * and on PostgreSQL with HOOKGATE_TEST_STORE=postgres. `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startServer, waitFor } from '../support/runtime-kit.js';
import { type Hookgate, runCli, TOKEN } from '../support/server.js';

const CI = 'ci-token-0123456789abcdefghij';
const LEGACY = 'legacy-token-0123456789abcdefghij';
const GONE = 'gone-token-0123456789abcdefghij';
const OPS_A = 'ops-a-admin-token-0123456789abcdef';
const OPS_B = 'ops-b-admin-token-0123456789abcdef';
const OPS_GONE = 'ops-gone-admin-token-0123456789abc';

describe('token rotation without downtime (hooks.tokens, admin.tokens, hookgate token rotate)', {
  timeout: 180_000,
}, () => {
  let hg: Hookgate;
  let adminUrl: string;
  const secrets = [CI, LEGACY, GONE, OPS_A, OPS_B, OPS_GONE, TOKEN];

  const wake = (token: string, text = 'tokens') =>
    hg.post('/hooks/wake', { text, mode: 'next-heartbeat' }, { authorization: `Bearer ${token}` });
  const admin = (token: string, path = '/api/v1/runs') =>
    fetch(`${adminUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const reloads = () => hg.logs.filter((l) => l.msg === 'config reloaded').length;
  const received = async () => {
    const r = await admin(OPS_A, '/api/v1/received?limit=200');
    assert.equal(r.status, 200);
    return ((await r.json()) as { items: Array<{ at: number; status: number; tokenId: string | null; path: string }> })
      .items;
  };
  const rotate = async (args: string[]) => {
    const before = reloads();
    const r = await runCli(['token', 'rotate', '--config', hg.configFile, ...args]);
    assert.equal(r.code, 0, r.stderr);
    const token = r.stdout.trim();
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    secrets.push(token);
    await waitFor('the server to reload the rotated config', () => reloads() > before, 20_000);
    return { token, stderr: r.stderr };
  };

  before(async () => {
    hg = await startServer({
      heartbeat: { every: 'off' },
      hooks: {
        // hooks.token (TOKEN, the harness's) stays: it is "default" beside the list.
        tokens: [
          { id: 'ci', token: CI },
          { id: 'legacy', token: LEGACY },
          { id: 'gone', token: GONE, notAfter: '2020-01-01T00:00:00Z' },
        ],
      },
      admin: {
        enabled: true,
        port: 0,
        tokens: [
          { id: 'ops-a', token: OPS_A },
          { id: 'ops-b', token: OPS_B },
          { id: 'ops-gone', token: OPS_GONE, notAfter: 1577836800000 },
        ],
      },
    });
    adminUrl = hg.logs.find((l) => l.msg === 'hookgate listening')!.adminUrl as string;
  });
  after(async () => {
    await hg?.cleanup();
  });

  it('every listed token is accepted, and the received record names its id (hooks.token is "default")', async () => {
    for (const [token, id] of [
      [CI, 'ci'],
      [LEGACY, 'legacy'],
      [TOKEN, 'default'],
    ] as const) {
      const r = await wake(token, `from ${id}`);
      assert.equal(r.status, 200, r.text);
    }
    const items = await waitFor('three accepted wakes in the received list', async () => {
      const list = (await received()).filter((i) => i.path === 'wake' && i.status === 200);
      return list.length >= 3 ? list : undefined;
    });
    assert.deepEqual(
      items
        .slice(0, 3)
        .map((i) => i.tokenId)
        .sort(),
      ['ci', 'default', 'legacy'],
    );
    // The CLI's list shows it too.
    const cli = await runCli(['received', '--json', '--config', hg.configFile]);
    assert.equal(cli.code, 0, cli.stderr);
    const rows = JSON.parse(cli.stdout) as Array<{ tokenId?: string }>;
    assert.deepEqual(
      rows
        .map((r) => r.tokenId)
        .filter(Boolean)
        .sort(),
      ['ci', 'default', 'legacy'],
    );
    const table = await runCli(['received', '--config', hg.configFile]);
    assert.match(table.stdout.split('\n')[0]!, /\bTOKEN\b/);
    assert.match(table.stdout, /\blegacy\b/);
  });

  it('an expired token is refused with 401 like a wrong one; the log names its id, never a token', async () => {
    const expired = await wake(GONE);
    const wrong = await wake('not-a-token-0123456789abcdefghij');
    assert.deepEqual(
      [expired.status, expired.body],
      [401, { ok: false, error: 'missing or invalid hook token', code: 'unauthorized' }],
    );
    assert.deepEqual([wrong.status, wrong.body], [expired.status, expired.body]);
    await hg.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('expired token gone'));
    const refused = (await received()).filter((i) => i.status === 401);
    assert.ok(
      refused.every((i) => i.tokenId === null),
      'a refused request names no token',
    );
  });

  it('admin.tokens: each listed admin token works on the admin listener; an expired one and every hook token are 401', async () => {
    assert.equal((await admin(OPS_A)).status, 200);
    assert.equal((await admin(OPS_B)).status, 200);
    assert.equal((await admin(OPS_GONE)).status, 401);
    for (const hook of [TOKEN, CI, GONE])
      assert.equal((await admin(hook)).status, 401, 'a hook token is never an admin token');
    assert.equal((await wake(OPS_A)).status, 401, 'nor an admin token a hook token');
  });

  it('hookgate token rotate: the running server accepts the new hook token at once, the old ones until --not-after-old', async () => {
    const started = Date.now();
    const { token: fresh, stderr } = await rotate(['--id', 'ci-2', '--not-after-old', '15s']);
    assert.match(stderr, /hooks\.token moved into hooks\.tokens as "default"/);
    assert.equal((await wake(fresh, 'fresh')).status, 200);
    // Until notAfter (15 s after the rotation; well before it here), the old tokens still work.
    for (const old of [TOKEN, CI, LEGACY]) assert.equal((await wake(old, 'old')).status, 200);
    assert.ok(Date.now() - started < 15_000, 'checked before notAfter');
    const list = await waitFor('the fresh token named in the received list', async () =>
      (await received()).find((i) => i.tokenId === 'ci-2'),
    );
    assert.equal(list.status, 200);
    // Then they are refused, with no restart and no reload; the new one keeps working.
    await waitFor('the old token to expire', async () => (await wake(CI, 'expiring')).status === 401, {
      timeoutMs: 40_000,
      intervalMs: 500,
    });
    assert.equal((await wake(LEGACY)).status, 401);
    assert.equal((await wake(TOKEN)).status, 401);
    assert.equal((await wake(fresh, 'after')).status, 200);
  });

  it('hookgate token rotate --admin: the same on the admin listener', async () => {
    const { token: fresh } = await rotate(['--admin', '--not-after-old', '10s']);
    assert.equal((await admin(fresh)).status, 200);
    assert.equal((await admin(OPS_A)).status, 200, 'the old admin token works until its notAfter');
    assert.equal((await wake(fresh)).status, 401, 'an admin token is not a hook token');
    await waitFor('the old admin token to expire', async () => (await admin(OPS_B)).status === 401, {
      timeoutMs: 40_000,
      intervalMs: 500,
    });
    assert.equal((await admin(OPS_A)).status, 401);
    assert.equal((await admin(fresh)).status, 200);
  });

  it('no log line carries a token', () => {
    for (const line of hg.lines)
      for (const s of secrets) assert.ok(!line.includes(s), `a log line carries a token: ${line.slice(0, 200)}`);
  });
});
