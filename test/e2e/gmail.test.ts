/**
 * The Gmail push chain end to end (docs/gmail.md), against the real server process and local stand-ins for Google (a
 * JWKS endpoint with keys generated here, the token endpoint, the Gmail API): a verified push → one run whose prompt
 * holds the mail inside the external-content wrapper; forged / wrong audience / wrong service account / expired
 * tokens → 401 and nothing stored; a redelivered push → no second run; a history gap → the latest messages synced;
 * kill -9 after the push was accepted → the fetch completes after the restart; the watch renewed on schedule.
 * Run `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SqliteStore } from '../../src/store/sqlite.js';
import {
  ACCOUNT,
  type GoogleStandin,
  OAUTH,
  pushEnvelope,
  SERVICE_ACCOUNT,
  startGoogleStandin,
} from '../support/gmail-standin.js';
import { openServerStore, startServer, waitFor } from '../support/runtime-kit.js';
import { type ScriptedModel, startScriptedModel } from '../support/scripted-model.js';
import { type Hookgate, request } from '../support/server.js';

const AUDIENCE = 'https://hookgate.test/hooks/gmail-push';
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function config(google: GoogleStandin, model: ScriptedModel, renewEveryHours = 24): Record<string, unknown> {
  return {
    heartbeat: { every: 'off' },
    models: { providers: { m: { api: 'openai-chat', baseUrl: model.url, apiKey: 'test-key', maxAttempts: 1 } } },
    agents: { list: [{ id: 'main', default: true, model: 'm/x' }] },
    hooks: {
      gmail: {
        account: ACCOUNT,
        topic: 'projects/proj/topics/gmail',
        audience: AUDIENCE,
        serviceAccountEmail: SERVICE_ACCOUNT,
        oauth: OAUTH,
        renewEveryHours,
        gmailApiBaseUrl: google.url,
        tokenUrl: google.tokenUrl,
        jwksUrl: google.jwksUrl,
      },
    },
  };
}

async function push(hg: Hookgate, token: string, messageId: string, historyId: number) {
  return request(`${hg.url}/hooks/gmail-push`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(pushEnvelope(messageId, historyId)),
  });
}

const gmailRuns = async (store: SqliteStore) =>
  (await store.listRuns({ limit: 500 })).filter((r) => r.hookPath === 'gmail');

describe('gmail push chain (e2e)', { timeout: 300_000 }, () => {
  let google: GoogleStandin;
  let model: ScriptedModel;
  let hg: Hookgate;
  let store: SqliteStore;

  before(async () => {
    google = await startGoogleStandin();
    cleanups.push(() => google.close());
    model = await startScriptedModel((c) => (c.heartbeat ? 'HEARTBEAT_OK' : 'noted'));
    cleanups.push(() => model.close());
    hg = await startServer(config(google, model));
    cleanups.push(() => hg.cleanup());
    store = openServerStore(hg);
    cleanups.push(() => store.close());
    // The watch at start sets where history starts.
    await waitFor('the first watch', async () => (await store.readGmailStatus(ACCOUNT))?.watchExpiration);
  });

  it('a push with a valid token → one run whose prompt holds from, subject and body inside the external-content wrapper', async () => {
    const historyId = google.addMail({
      id: 'm1',
      from: 'Bob <bob@example.com>',
      subject: 'Quarterly numbers',
      text: 'Revenue is up 12 percent.',
    });
    const r = await push(hg, await google.token(), 'pubsub-1', historyId);
    assert.equal(r.status, 200, r.text);
    const runs = await waitFor(
      'the run of m1',
      async () => {
        const rs = await gmailRuns(store);
        return rs.length === 1 && rs[0]!.state === 'succeeded' ? rs : undefined;
      },
      20_000,
    );
    assert.equal(runs[0]!.sessionKey, 'hook:gmail:m1');
    assert.equal(runs[0]!.contentSource, 'email');
    const call = model.calls.find((c) => !c.heartbeat && c.lastUser.includes('Quarterly numbers'));
    assert.ok(call, 'the model saw the mail');
    const prompt = call.lastUser;
    assert.match(prompt, /<<<EXTERNAL_UNTRUSTED_CONTENT id="[0-9a-f]+">>>/);
    const inside = prompt.slice(
      prompt.indexOf('<<<EXTERNAL_UNTRUSTED_CONTENT'),
      prompt.indexOf('<<<END_EXTERNAL_UNTRUSTED_CONTENT'),
    );
    for (const s of ['New email from Bob <bob@example.com>', 'Subject: Quarterly numbers', 'Revenue is up 12 percent.'])
      assert.ok(inside.includes(s), `${s} inside the wrapper`);
    const status = await waitFor('the fetch committed', async () => {
      const st = await store.readGmailStatus(ACCOUNT);
      return st?.pendingPushes === 0 ? st : undefined;
    });
    assert.equal(status?.historyId, String(google.historyId));
    assert.equal(status?.messagesFetched, 1);
    assert.equal(status?.pendingPushes, 0);
    // The token endpoint got the refresh_token grant once; the access token is cached.
    assert.equal(google.tokenGrants, 1);
    assert.ok(google.calls.some((c) => c.startsWith('GET /gmail/v1/users/me/messages/m1?format=full')));
  });

  it('a redelivered push (same Pub/Sub message id) → 200 duplicate, no second run', async () => {
    const r = await push(hg, await google.token(), 'pubsub-1', google.historyId);
    assert.equal(r.status, 200);
    assert.equal(r.body?.duplicate, true);
    // A new push of the same mail (another message id) fetches nothing new either: m1 is idempotent by message id.
    const r2 = await push(hg, await google.token(), 'pubsub-1b', google.historyId);
    assert.equal(r2.status, 200);
    await waitFor('the second push fetched', async () => (await store.readGmailStatus(ACCOUNT))?.pendingPushes === 0);
    assert.equal((await gmailRuns(store)).length, 1);
  });

  it('forged signature, wrong audience, wrong issuer, wrong service account, unverified email, expired token, the hook token → 401, nothing stored', async () => {
    const before = await store.readGmailStatus(ACCOUNT);
    const historyId = google.addMail({ id: 'never', from: 'x@example.com', subject: 'should not run', text: 'x' });
    const bad = [
      await google.token({}, { forge: true }),
      await google.token({ aud: 'https://elsewhere.test/' }),
      await google.token({ iss: 'https://evil.example.com' }),
      await google.token({ email: 'someone-else@proj.iam.gserviceaccount.com' }),
      await google.token({ email_verified: false }),
      await google.token({}, { expiresIn: -600 }),
      'hook-token-is-not-accepted-here-00000000',
    ];
    for (const [i, token] of bad.entries()) {
      const r = await push(hg, token, `bad-${i}`, historyId);
      assert.equal(r.status, 401, `token ${i}: ${r.text}`);
      assert.equal(r.body?.code, 'unauthorized');
    }
    const noAuth = await request(`${hg.url}/hooks/gmail-push`, {
      method: 'POST',
      body: JSON.stringify(pushEnvelope('bad-x', historyId)),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(noAuth.status, 401);
    const afterStatus = await store.readGmailStatus(ACCOUNT);
    assert.equal(afterStatus?.lastPushAt, before?.lastPushAt);
    assert.equal(afterStatus?.pendingPushes, 0);
    assert.deepEqual(await store.pendingGmailPushes(ACCOUNT), []);
    assert.equal((await gmailRuns(store)).length, 1);
    // The message is fetched by the next valid push (it is in the mailbox), so the log must not carry the token.
    assert.ok(!hg.lines.some((l) => bad.slice(0, 6).some((t) => l.includes(t))), 'no token in the logs');
  });

  it('429 from the Gmail API is retried with backoff; a history gap (404) syncs the latest messages instead', async () => {
    // The previous test's "never" mail is in the mailbox: it will be synced too (it is among the latest).
    google.addMail({
      id: 'm2',
      from: 'Carol <carol@example.com>',
      subject: 'Lunch?',
      html: '<p>Shall we have <b>lunch</b> at noon?</p>',
    });
    const h3 = google.addMail({ id: 'm3', from: 'Dan <dan@example.com>', subject: 'Gap', text: 'after the gap' });
    google.oldestHistoryId = google.historyId; // every stored start is now too old
    google.fail429 = 2;
    const r = await push(hg, await google.token(), 'pubsub-2', h3);
    assert.equal(r.status, 200);
    const runs = await waitFor(
      'the synced messages',
      async () => {
        const rs = await gmailRuns(store);
        return rs.length >= 4 ? rs : undefined;
      },
      30_000,
    );
    assert.deepEqual(runs.map((x) => x.sessionKey).sort(), [
      'hook:gmail:m1',
      'hook:gmail:m2',
      'hook:gmail:m3',
      'hook:gmail:never',
    ]);
    assert.ok(
      google.calls.some((c) => c.startsWith('GET /gmail/v1/users/me/messages?labelIds=INBOX')),
      'messages.list was used',
    );
    const lunch = runs.find((x) => x.sessionKey === 'hook:gmail:m2');
    assert.match(lunch!.message, /Shall we have lunch at noon\?/i);
    assert.doesNotMatch(lunch!.message, /<b>/);
    // The runs are committed one by one; the history id with the fetch's last commit.
    await waitFor('the fetch committed at the current history id', async () => {
      const st = await store.readGmailStatus(ACCOUNT);
      return st?.historyId === String(google.historyId) && st.pendingPushes === 0;
    });
    assert.equal(google.fail429, 0);
  });

  it('the watch is renewed on schedule and its expiry is stored', async () => {
    const google2 = await startGoogleStandin();
    cleanups.push(() => google2.close());
    const hg2 = await startServer(config(google2, model, 0.0005)); // every 1.8 s
    cleanups.push(() => hg2.cleanup());
    const store2 = openServerStore(hg2);
    cleanups.push(() => store2.close());
    await waitFor('three watches', () => google2.watches >= 3, 20_000);
    const s = await store2.readGmailStatus(ACCOUNT);
    assert.ok(s?.watchExpiration && s.watchExpiration > Date.now() + 6 * 86_400_000);
    assert.ok(google2.calls.filter((c) => c === 'POST /gmail/v1/users/me/watch').length >= 3);
    await hg2.stop();
  });

  it('kill -9 after the push was accepted → the fetch completes after the restart', async () => {
    const google3 = await startGoogleStandin();
    cleanups.push(() => google3.close());
    const hg3 = await startServer(config(google3, model));
    cleanups.push(() => hg3.cleanup());
    const store3 = openServerStore(hg3);
    cleanups.push(() => store3.close());
    await waitFor('the first watch', async () => (await store3.readGmailStatus(ACCOUNT))?.historyId);
    let release!: () => void;
    google3.hold = new Promise<void>((resolve) => (release = resolve));
    const h = google3.addMail({
      id: 'k1',
      from: 'Eve <eve@example.com>',
      subject: 'Crash test',
      text: 'survives kill -9',
    });
    const r = await push(hg3, await google3.token(), 'pubsub-k1', h);
    assert.equal(r.status, 200);
    await waitFor('the fetch in flight', () =>
      google3.calls.some((c) => c.startsWith('GET /gmail/v1/users/me/history')),
    );
    await hg3.kill9();
    assert.equal((await store3.pendingGmailPushes(ACCOUNT)).length, 1, 'the push is committed and still pending');
    release();
    google3.hold = undefined;
    await hg3.restart();
    const runs = await waitFor(
      'the run of k1 after the restart',
      async () => {
        const rs = await gmailRuns(store3);
        return rs.length === 1 ? rs : undefined;
      },
      60_000 + (hg3.storage.driver === 'postgres' ? 35_000 : 0),
    ); // PostgreSQL: the dead node's fetch lease lapses first (30 s)
    assert.equal(runs[0]!.sessionKey, 'hook:gmail:k1');
    await waitFor('the push fetched', async () => (await store3.readGmailStatus(ACCOUNT))?.pendingPushes === 0, 20_000);
  });
});
