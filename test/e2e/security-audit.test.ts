/**
 * The audit trail (docs/security.md#the-audit-trail-hookgate-audit) against the real server process: a config reload is
 * one `event: "audit"` log line and a record listed by `hookgate audit --json`, changes by key path with every secret
 * masked (no secret value anywhere in the logs); a refused reload is recorded too; an admin retry (actor "admin") and a
 * CLI retry (actor "cli") are recorded; a flood of bad tokens that locks a client out is one record; a session route
 * set with `hookgate sessions route` is recorded with the route it replaced. Runs on SQLite, and on PostgreSQL with
 * HOOKGATE_TEST_STORE=postgres. `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startOpenAIStandin, type OpenAIStandin } from '../support/openai-standin.js';
import { cli, postAgent, startServer, waitFor } from '../support/runtime-kit.js';
import { type Hookgate, request } from '../support/server.js';

const ADMIN_TOKEN = 'admin-token-for-audit-tests-0123456789';
const ADMIN_TOKEN_2 = 'admin-token-rotated-audit-9876543210ab';
const API_KEY = 'provider-api-key-secret-AAAA1111';
const API_KEY_2 = 'provider-api-key-secret-BBBB2222';
const MAX_FAILURES = 3;
/** An incoming-webhook URL carries its secret in the path and the query: none of these may reach the audit trail. */
const URL_SECRETS = ['PATHSECRET456', 'URLSECRET123', 'QSIG789'];
const TARGET_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

interface AuditRecord {
  id: string;
  at: number;
  kind: string;
  actor: string;
  node: string | null;
  detail: Record<string, any>;
}

describe('security: the audit trail', { timeout: 180_000 }, () => {
  let hg: Hookgate;
  let ai: OpenAIStandin;
  let adminUrl: string;
  let adminToken = ADMIN_TOKEN;

  const admin = async (path: string, method = 'GET') => {
    const r = await fetch(`${adminUrl}${path}`, { method, headers: { authorization: `Bearer ${adminToken}` } });
    return { status: r.status, body: (await r.json()) as Record<string, any> };
  };
  const auditCli = async (...args: string[]): Promise<AuditRecord[]> => {
    const r = await cli(hg, 'audit', '--json', ...args);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as AuditRecord[];
  };
  const auditLines = (kind: string) => hg.logs.filter((l) => l.event === 'audit' && l.kind === kind);
  const editConfig = (edit: (c: Record<string, any>) => void) => {
    const c = JSON.parse(readFileSync(hg.configFile, 'utf8')) as Record<string, any>;
    edit(c);
    writeFileSync(hg.configFile, JSON.stringify(c, null, 2));
  };

  before(async () => {
    ai = await startOpenAIStandin({ apiKey: null }); // any key: the test rotates the provider's key by a reload
    hg = await startServer({
      heartbeat: { every: 'off' },
      admin: { enabled: true, port: 0, token: ADMIN_TOKEN },
      hooks: { authFailureLimit: { maxFailures: MAX_FAILURES, windowSeconds: 60, lockoutSeconds: 120 } },
      models: { providers: { local: { api: 'openai-chat', baseUrl: ai.url, apiKey: API_KEY, maxAttempts: 1 } } },
      agents: { defaults: { model: 'echo/echo', retry: { maxSeconds: 1, initialBackoffMs: 100, maxBackoffMs: 200 } } },
      channels: { webhook: { targets: { recv: { url: 'http://127.0.0.1:21099/recv', secret: TARGET_SECRET } } } },
    });
    adminUrl = hg.logs.find((l) => l.msg === 'hookgate listening')!.adminUrl as string;
  });
  after(async () => {
    await hg?.cleanup().catch(() => undefined);
    await ai?.close().catch(() => undefined);
  });

  it('a reload: one audit line and one stored record with the changes by key path; secrets masked; the token rotation named', async () => {
    editConfig((c) => {
      c.models.providers.local.apiKey = API_KEY_2;
      c.admin.token = ADMIN_TOKEN_2;
      c.hooks.receivedRetentionDays = 8;
    });
    const line = await hg.waitForLog((l) => l.event === 'audit' && l.kind === 'config.reload', 10_000);
    adminToken = ADMIN_TOKEN_2;
    assert.equal(line.level, 30, 'info');
    assert.equal(line.actor, 'config');
    const changes = (line.detail as { changes: Array<Record<string, unknown>> }).changes;
    assert.deepEqual(
      changes.map((c) => [c.path, c.from, c.to]).sort(),
      [
        ['admin.token', '***', '***'],
        ['hooks.receivedRetentionDays', 7, 8],
        ['models.providers.local.apiKey', '***', '***'],
      ].sort(),
    );
    const rotated = await hg.waitForLog((l) => l.event === 'audit' && l.kind === 'token.rotated');
    assert.equal((rotated.detail as { path: string }).path, 'admin.token');

    const records = await waitFor('the reload records in the store', async () => {
      const list = await auditCli();
      return list.some((r) => r.kind === 'token.rotated') ? list : undefined;
    });
    const reload = records.find((r) => r.kind === 'config.reload')!;
    assert.equal(reload.id, line.auditId);
    assert.deepEqual(reload.detail.changes, changes);
    assert.equal(typeof reload.node, 'string', 'the node that wrote it');
    assert.deepEqual(
      (await auditCli('--kind', 'token.rotated')).map((r) => r.detail.path),
      ['admin.token'],
    );
    // The new admin token applies at once: the admin API answers it, and lists the records too.
    const api = await admin('/api/v1/audit?kind=config.reload');
    assert.equal(api.status, 200);
    assert.deepEqual(
      api.body.items.map((r: AuditRecord) => r.id),
      [reload.id],
    );
    const bad = await admin('/api/v1/audit?kind=nope');
    assert.deepEqual([bad.status, bad.body.code], [400, 'invalid_query']);
  });

  it("a webhook target URL's path and query secrets are masked in the log line, the record and the admin API", async () => {
    const changed = (l: Record<string, unknown>) =>
      l.event === 'audit' &&
      l.kind === 'config.reload' &&
      JSON.stringify(l.detail).includes('channels.webhook.targets.recv.url');
    editConfig((c) => {
      c.channels.webhook.targets.recv.url = `http://127.0.0.1:21099/services/T0/B0/${URL_SECRETS[0]}?key=${URL_SECRETS[1]}&sig=${URL_SECRETS[2]}`;
    });
    const line = await hg.waitForLog(changed, 10_000);
    const change = (line.detail as { changes: Array<Record<string, unknown>> }).changes.find(
      (c) => c.path === 'channels.webhook.targets.recv.url',
    );
    assert.deepEqual(change, {
      path: 'channels.webhook.targets.recv.url',
      op: 'changed',
      from: 'http://127.0.0.1:21099/recv',
      to: 'http://127.0.0.1:21099/services/***/***/***?key=***&sig=***',
    });
    const api = await waitFor('the record in the admin API', async () => {
      const r = await admin('/api/v1/audit?kind=config.reload&limit=1');
      return r.body.items?.[0]?.id === line.auditId ? r : undefined;
    });
    const answer = JSON.stringify(api.body);
    assert.deepEqual(
      URL_SECRETS.filter((s) => answer.includes(s)),
      [],
      'secrets in GET /api/v1/audit',
    );
    const stored = JSON.stringify(await auditCli('--kind', 'config.reload'));
    assert.deepEqual(
      URL_SECRETS.filter((s) => stored.includes(s)),
      [],
      'secrets in the stored records',
    );
  });

  it('a refused reload is recorded with the key paths at fault; the old config stays', async () => {
    editConfig((c) => (c.hooks.receivedRetentionDays = -1));
    const line = await hg.waitForLog((l) => l.event === 'audit' && l.kind === 'config.rejected', 10_000);
    assert.deepEqual((line.detail as { paths: string[] }).paths, ['hooks.receivedRetentionDays']);
    editConfig((c) => (c.hooks.receivedRetentionDays = 8));
    await waitFor(
      'the refusal in the store',
      async () => (await auditCli('--kind', 'config.rejected')).length === 1 || undefined,
    );
  });

  it('an admin retry (actor admin) and a CLI retry (actor cli) are recorded with the run id', async () => {
    ai.setMode('unauthorized');
    const runId = await postAgent(hg, {
      message: 'will fail',
      name: 'Flaky',
      model: 'local/gpt-main',
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    try {
      await waitFor(
        'the run to fail',
        async () => (await admin(`/api/v1/runs/${runId}`)).body.state === 'failed' || undefined,
        20_000,
      );
    } finally {
      ai.setMode('ok');
    }
    const retry = await admin(`/api/v1/runs/${runId}/retry`, 'POST');
    assert.equal(retry.status, 200);
    const line = await hg.waitForLog((l) => l.event === 'audit' && l.kind === 'admin.retry');
    assert.equal(line.actor, 'admin');
    assert.deepEqual(line.detail, { runId, from: 'failed' });
    await waitFor(
      'the run to succeed',
      async () => (await admin(`/api/v1/runs/${runId}`)).body.state === 'succeeded' || undefined,
      20_000,
    );

    const byCli = await cli(hg, 'runs', 'retry', runId);
    assert.equal(byCli.code, 0, byCli.stderr);
    const records = await waitFor('both retries in the store', async () => {
      const list = await auditCli('--kind', 'admin.retry');
      return list.length === 2 ? list : undefined;
    });
    assert.deepEqual(
      records.map((r) => [r.actor, r.detail.runId]),
      [
        ['cli', runId],
        ['admin', runId],
      ],
    );
    assert.equal(records[0]!.node, null);
  });

  it('a lockout is one record, however many bad tokens follow it', async () => {
    const bad = () =>
      request(`${hg.url}/hooks/wake`, {
        method: 'POST',
        body: '{"text":"x"}',
        headers: { authorization: 'Bearer wrong-token', 'content-type': 'application/json' },
      });
    const statuses: number[] = [];
    for (let i = 0; i < MAX_FAILURES + 10; i++) statuses.push((await bad()).status);
    assert.deepEqual(statuses.slice(0, MAX_FAILURES), Array(MAX_FAILURES).fill(401));
    assert.ok(
      statuses.slice(MAX_FAILURES).every((s) => s === 429),
      statuses.join(','),
    );
    const line = await hg.waitForLog((l) => l.event === 'audit' && l.kind === 'lockout');
    assert.equal(line.actor, '127.0.0.1');
    assert.deepEqual(
      { ...(line.detail as object), until: 0 },
      { failures: MAX_FAILURES, windowSeconds: 60, lockoutSeconds: 120, until: 0 },
    );
    const records = await waitFor('the lockout in the store', async () => {
      const list = await auditCli('--kind', 'lockout');
      return list.length ? list : undefined;
    });
    assert.equal(records.length, 1);
    assert.equal(auditLines('lockout').length, 1);
    // The table form names it too.
    const table = await cli(hg, 'audit', '--kind', 'lockout', '--since', '1h');
    assert.match(table.stdout, /lockout\s+127\.0\.0\.1\s+locked 120 s after 3 failures in 60 s/);
  });

  it("setting a session's route by hand is recorded (actor cli, the session, old and new route), listed by the CLI and the admin API", async () => {
    for (const to of ['owner-chat', 'owner-chat-2']) {
      const set = await cli(hg, 'sessions', 'route', 'main', '--channel', 'log', '--to', to);
      assert.equal(set.code, 0, set.stderr);
    }
    const records = await auditCli('--kind', 'session.route');
    assert.deepEqual(
      records.map((r) => [r.actor, r.node, r.detail]),
      [
        [
          'cli',
          null,
          {
            sessionKey: 'main',
            from: { channel: 'log', to: 'owner-chat', accountId: null },
            to: { channel: 'log', to: 'owner-chat-2', accountId: null },
          },
        ],
        ['cli', null, { sessionKey: 'main', from: null, to: { channel: 'log', to: 'owner-chat', accountId: null } }],
      ],
    );
    const api = await admin('/api/v1/audit?kind=session.route');
    assert.equal(api.status, 200);
    assert.deepEqual(
      api.body.items.map((r: AuditRecord) => r.id),
      records.map((r) => r.id),
    );
    const table = await cli(hg, 'audit', '--kind', 'session.route');
    assert.match(table.stdout, /session\.route\s+cli\s+session main: log → owner-chat ⇒ log → owner-chat-2/);
    assert.match(table.stdout, /session main: none ⇒ log → owner-chat\n/);
  });

  it('no secret value appears anywhere in the logs', () => {
    const all = hg.lines.join('\n');
    for (const secret of [ADMIN_TOKEN, ADMIN_TOKEN_2, API_KEY, API_KEY_2, TARGET_SECRET, ...URL_SECRETS])
      assert.equal(all.includes(secret), false, `${secret.slice(0, 12)}… in the logs`);
  });
});
