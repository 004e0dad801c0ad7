/**
 * `hookgate gmail status` reads the mailbox's state from the store (never creating one) and
 * `hookgate gmail stop` calls Gmail's users.stop with a token from the configured refresh token; both as the built
 * binary, against a stand-in of Google's token endpoint and Gmail API.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { starterConfig } from '../../src/cli/starter-config.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { type GoogleStandin, startGoogleStandin } from '../support/google-admin-standin.js';
import { runCli } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

let google: GoogleStandin;
before(async () => {
  google = await startGoogleStandin();
  google.refreshTokens.set('rtoken', { clientId: 'cid', clientSecret: 'csecret' });
});
after(() => google.close());

const GMAIL = (base: string) => `
    gmail: {
      account: "ada@example.com",
      project: "my-proj-1",
      topic: "hookgate-gmail",
      subscription: "hookgate-gmail-push",
      audience: "https://hooks.example.com/hooks/gmail-push",
      serviceAccountEmail: "push@my-proj-1.iam.gserviceaccount.com",
      oauth: { clientId: "cid", clientSecret: { env: "GMAIL_CLIENT_SECRET" }, refreshToken: { env: "GMAIL_REFRESH_TOKEN" } },
      gmailApiBaseUrl: "${base}",
      tokenUrl: "${base}/token",
      jwksUrl: "${base}/certs",
    },`;

function project(): string {
  const dir = tempDir('hookgate-gmail-status-');
  writeFileSync(
    join(dir, 'hookgate.json5'),
    starterConfig(TOKEN).replace('    mappings: [],', `    mappings: [],${GMAIL(google.url)}`),
    { mode: 0o600 },
  );
  return dir;
}

describe('cli: gmail status', () => {
  it('creates no store, and says where it looked', async () => {
    const dir = project();
    const r = await runCli(['gmail', 'status'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no store at .*data\/hookgate\.db/);
    assert.equal(existsSync(join(dir, 'data')), false, 'nothing created');
  });

  it('on an empty store: the config side, and no state yet; then the watch, pushes and fetches as the store holds them', async () => {
    const dir = project();
    mkdirSync(join(dir, 'data'));
    const path = join(dir, 'data/hookgate.db');
    new SqliteStore({ path, writer: 'inline' }).close();
    // Without the OAuth secrets in the environment: status needs none.
    const empty = await runCli(['gmail', 'status'], { cwd: dir });
    assert.equal(empty.code, 0, empty.stderr);
    assert.match(empty.stdout, /gmail ada@example\.com \(config .*hookgate\.json5\)/);
    assert.match(empty.stdout, /topic: +projects\/my-proj-1\/topics\/hookgate-gmail/);
    assert.match(
      empty.stdout,
      /subscription: +projects\/my-proj-1\/subscriptions\/hookgate-gmail-push → \/hooks\/gmail-push/,
    );
    assert.match(empty.stdout, /state: +none yet/);
    const emptyJson = JSON.parse((await runCli(['gmail', 'status', '--json'], { cwd: dir })).stdout) as {
      state: unknown;
      watchExpired: unknown;
    };
    assert.equal(emptyJson.state, null);
    assert.equal(emptyJson.watchExpired, null);

    const now = Date.now();
    const store = new SqliteStore({ path, writer: 'inline' });
    await store.recordGmailWatch({
      account: 'ada@example.com',
      expiration: now + 7 * 86_400_000 - 60_000,
      historyId: '1000',
      now,
    });
    await store.recordGmailPush({ messageId: 'm-1', account: 'ada@example.com', historyId: '1005', receivedAt: now });
    await store.recordGmailPush({
      messageId: 'm-2',
      account: 'ada@example.com',
      historyId: '1007',
      receivedAt: now + 1,
    });
    await store.completeGmailFetch({
      account: 'ada@example.com',
      pushIds: ['m-1'],
      historyId: '1005',
      messages: 2,
      now: now + 2,
    });
    await store.recordGmailError('ada@example.com', 'users.history.list: 503', now + 3);
    await store.close();

    const r = await runCli(['gmail', 'status'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /watch: +expires \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(in 6 d 23 h\); renewed /);
    assert.match(r.stdout, /history id: +1005/);
    assert.match(r.stdout, /last push: +\d{4}-.*\(0 min ago\)/);
    assert.match(r.stdout, /messages fetched: 2 +pending pushes: 1/);
    assert.match(r.stdout, /last error: +users\.history\.list: 503/);
    const json = JSON.parse((await runCli(['gmail', 'status', '--json'], { cwd: dir })).stdout) as {
      account: string;
      watchExpired: boolean;
      state: { historyId: string; messagesFetched: number; pendingPushes: number; lastPushAt: number };
    };
    assert.equal(json.account, 'ada@example.com');
    assert.equal(json.watchExpired, false);
    assert.equal(json.state.historyId, '1005');
    assert.equal(json.state.messagesFetched, 2);
    assert.equal(json.state.pendingPushes, 1);
  });

  it('a config without hooks.gmail: exit 1 naming the key and the command that writes it', async () => {
    const dir = tempDir('hookgate-gmail-none-');
    writeFileSync(join(dir, 'hookgate.json5'), starterConfig(TOKEN));
    const r = await runCli(['gmail', 'status'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /hooks\.gmail\.account is not set in .*hookgate\.json5.*hookgate gmail setup/);
  });
});

describe('cli: gmail stop', () => {
  it('trades the refresh token for an access token and calls users.stop with it', async () => {
    const dir = project();
    const from = google.log.length;
    const r = await runCli(['gmail', 'stop'], {
      cwd: dir,
      env: { GMAIL_CLIENT_SECRET: 'csecret', GMAIL_REFRESH_TOKEN: 'rtoken' },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /stopped the Gmail watch of ada@example\.com \(users\.stop\)/);
    assert.match(r.stdout, /note: a running hookgate watches again/);
    const calls = google.log.slice(from);
    assert.deepEqual(
      calls.map((c) => `${c.method} ${c.path}`),
      ['POST /token', 'POST /gmail/v1/users/me/stop'],
    );
    assert.deepEqual(calls[0]!.body, {
      grant_type: 'refresh_token',
      client_id: 'cid',
      client_secret: 'csecret',
      refresh_token: 'rtoken',
    });
    assert.match(calls[1]!.auth ?? '', /^Bearer issued-\d+$/);
    assert.deepEqual(google.stops.slice(-1), ['me']);
  });

  it('a revoked refresh token: exit 1 saying what invalid_grant means; the secrets must be set', async () => {
    const dir = project();
    const r = await runCli(['gmail', 'stop', '--json'], {
      cwd: dir,
      env: { GMAIL_CLIENT_SECRET: 'csecret', GMAIL_REFRESH_TOKEN: 'revoked' },
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /refused the refresh token \(invalid_grant: Token has been expired or revoked\.\)\. The refresh token was revoked, has expired/,
    );
    assert.ok(!r.stderr.includes('revoked\n') && !r.stderr.includes('csecret'), 'no secret in the message');
    const unset = await runCli(['gmail', 'stop'], { cwd: dir });
    assert.equal(unset.code, 1);
    assert.match(
      unset.stderr,
      /hooks\.gmail\.oauth\.clientSecret: environment variable GMAIL_CLIENT_SECRET is not set/,
    );
  });
});
