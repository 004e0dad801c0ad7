/**
 * `hookgate gmail setup` against a stand-in of Pub/Sub and Google's token endpoint that checks what
 * Google checks, run as the built binary: the topic, Gmail's publisher binding added to the existing policy (etag
 * round trip), the OIDC push subscription, idempotent re-runs, the config written (comments kept) and valid under
 * `hookgate config check`, `--print`, and the credential sources.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import JSON5 from 'json5';
import { starterConfig } from '../../src/cli/starter-config.js';
import { type GoogleStandin, startGoogleStandin } from '../support/google-admin-standin.js';
import { runCli } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

const PUBLISHER = 'serviceAccount:gmail-api-push@system.gserviceaccount.com';
const SA = 'hookgate-push@my-proj-1.iam.gserviceaccount.com';
const ARGS = [
  'gmail',
  'setup',
  '--account',
  'ada@example.com',
  '--project',
  'my-proj-1',
  '--push-endpoint',
  'https://hooks.example.com',
  '--service-account',
  SA,
];

let google: GoogleStandin;
before(async () => {
  google = await startGoogleStandin();
});
after(() => google.close());

/** A directory with the starter config (plus a comment of the user's), and the env that points setup at the stand-in. */
function project(): { dir: string; file: string; env: Record<string, string> } {
  const dir = tempDir('hookgate-gmail-setup-');
  const file = join(dir, 'hookgate.json5');
  writeFileSync(file, starterConfig(TOKEN).replace('  logging:', '  // my own note, keep me\n  logging:'), {
    mode: 0o600,
  });
  const env = {
    HOOKGATE_PUBSUB_URL: google.url,
    GOOGLE_OAUTH_ACCESS_TOKEN: 'test-access-token',
    GOOGLE_APPLICATION_CREDENTIALS: '',
    HOOKGATE_GOOGLE_TOKEN_URL: '',
  };
  return { dir, file, env };
}

const secretsEnv = {
  GMAIL_CLIENT_ID: 'cid.apps.googleusercontent.com',
  GMAIL_CLIENT_SECRET: 'csecret',
  GMAIL_REFRESH_TOKEN: 'rtoken',
};

describe('cli: gmail setup', () => {
  it('creates the topic, adds the publisher to the policy there is, creates the push subscription, writes a valid hooks.gmail', async () => {
    const { dir, file, env } = project();
    // Someone else already reads the topic's policy: their binding must survive.
    google.topics.set('projects/my-proj-1/topics/hookgate-gmail', {
      policy: { version: 1, bindings: [{ role: 'roles/pubsub.viewer', members: ['user:ops@example.com'] }] },
      version: 3,
    });
    const from = google.log.length;
    const r = await runCli(ARGS, { cwd: dir, env });
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const calls = google.log.slice(from);
    assert.ok(
      calls.every((c) => c.auth === 'Bearer test-access-token'),
      'every call carries the Bearer token',
    );
    assert.deepEqual(
      calls.map((c) => `${c.method} ${c.path}`),
      [
        'PUT /v1/projects/my-proj-1/topics/hookgate-gmail',
        'GET /v1/projects/my-proj-1/topics/hookgate-gmail:getIamPolicy',
        'POST /v1/projects/my-proj-1/topics/hookgate-gmail:setIamPolicy',
        'PUT /v1/projects/my-proj-1/subscriptions/hookgate-gmail-push',
      ],
    );
    assert.match(r.stdout, /topic projects\/my-proj-1\/topics\/hookgate-gmail: exists/);
    const set = calls[2]!.body as { policy: { etag: string; bindings: unknown[] } };
    assert.equal(set.policy.etag, Buffer.from('etag-3').toString('base64'), 'the etag read is sent back');
    assert.deepEqual(google.topics.get('projects/my-proj-1/topics/hookgate-gmail')!.policy.bindings, [
      { role: 'roles/pubsub.viewer', members: ['user:ops@example.com'] },
      { role: 'roles/pubsub.publisher', members: [PUBLISHER] },
    ]);
    const endpoint = 'https://hooks.example.com/hooks/gmail-push';
    assert.deepEqual(calls[3]!.body, {
      topic: 'projects/my-proj-1/topics/hookgate-gmail',
      pushConfig: { pushEndpoint: endpoint, oidcToken: { serviceAccountEmail: SA, audience: endpoint } },
      ackDeadlineSeconds: 60,
    });

    const text = readFileSync(file, 'utf8');
    assert.match(text, /\/\/ my own note, keep me/, "the user's comments survive");
    assert.equal(statSync(file).mode & 0o777, 0o600, 'the mode is kept');
    const gmail = (JSON5.parse(text) as { hooks: { gmail: Record<string, unknown> } }).hooks.gmail;
    assert.deepEqual(gmail, {
      account: 'ada@example.com',
      project: 'my-proj-1',
      topic: 'hookgate-gmail',
      subscription: 'hookgate-gmail-push',
      pushPath: 'gmail-push',
      audience: endpoint,
      serviceAccountEmail: SA,
      labels: ['INBOX'],
      includeBody: true,
      maxBodyChars: 20000,
      oauth: {
        clientId: { env: 'GMAIL_CLIENT_ID' },
        clientSecret: { env: 'GMAIL_CLIENT_SECRET' },
        refreshToken: { env: 'GMAIL_REFRESH_TOKEN' },
      },
      renewEveryHours: 24,
    });
    assert.match(r.stdout, /set GMAIL_CLIENT_ID, GMAIL_CLIENT_SECRET, GMAIL_REFRESH_TOKEN where hookgate serve runs/);

    const check = await runCli(['config', 'check'], { cwd: dir, env: secretsEnv });
    assert.equal(check.code, 0, check.stderr + check.stdout);
    const unset = await runCli(['config', 'check'], { cwd: dir });
    assert.equal(unset.code, 1, 'without the secrets the config names them');
    assert.match(
      unset.stderr,
      /hooks\.gmail\.oauth\.clientSecret: environment variable GMAIL_CLIENT_SECRET is not set/,
    );

    // Again: nothing new is created, nothing changes, and it says so.
    const again = await runCli([...ARGS, '--json'], { cwd: dir, env });
    assert.equal(again.code, 0, again.stderr);
    const out = JSON.parse(again.stdout) as {
      ok: boolean;
      steps: Array<{ step: string; outcome: string }>;
      config: { written: string };
    };
    assert.equal(out.ok, true);
    assert.deepEqual(
      out.steps.map((s) => `${s.step}:${s.outcome}`),
      ['topic:exists', 'publisher:present', 'subscription:exists'],
    );
    assert.match(out.config.written, /already holds these values/);
    assert.equal(readFileSync(file, 'utf8'), text, 'the file is untouched');
  });

  it('retries the IAM set from the get when the etag went stale (409 ABORTED), and keeps the concurrent change', async () => {
    const { dir, env } = project();
    const topic = 'projects/my-proj-1/topics/race';
    google.topics.set(topic, { policy: {}, version: 0 });
    google.beforeNextSet = () => {
      const t = google.topics.get(topic)!;
      t.policy = { version: 1, bindings: [{ role: 'roles/pubsub.subscriber', members: ['user:late@example.com'] }] };
      t.version++;
    };
    const r = await runCli([...ARGS, '--topic', 'race', '--subscription', 'race-push', '--no-write-config'], {
      cwd: dir,
      env,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(google.topics.get(topic)!.policy.bindings, [
      { role: 'roles/pubsub.subscriber', members: ['user:late@example.com'] },
      { role: 'roles/pubsub.publisher', members: [PUBLISHER] },
    ]);
    assert.match(r.stdout, /config: not written \(--no-write-config\); add this to hooks:\n\s+\/\/ Gmail push/);
  });

  it('signs in with a service-account key (an RS256 JWT assertion traded at the token endpoint)', async () => {
    const { dir, env } = project();
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const email = 'admin@my-proj-1.iam.gserviceaccount.com';
    google.serviceAccount = { email, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
    const keyFile = join(dir, 'key.json');
    writeFileSync(
      keyFile,
      JSON.stringify({
        type: 'service_account',
        client_email: email,
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
        private_key_id: 'k1',
        token_uri: `${google.url}/token`,
      }),
    );
    const from = google.log.length;
    const r = await runCli(
      [...ARGS, '--topic', 'sa-topic', '--subscription', 'sa-push', '--credentials', keyFile, '--no-write-config'],
      { cwd: dir, env: { ...env, GOOGLE_OAUTH_ACCESS_TOKEN: '' } },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Google credentials: --credentials \(.*key\.json\), service account admin@my-proj-1/);
    const calls = google.log.slice(from);
    assert.equal(calls[0]!.path, '/token');
    assert.equal((calls[0]!.body as Record<string, string>).grant_type, 'urn:ietf:params:oauth:grant-type:jwt-bearer');
    assert.ok(
      calls.slice(1).every((c) => /^Bearer issued-\d+$/.test(c.auth ?? '')),
      'the API calls use the token issued',
    );

    // A key the token endpoint does not know: its refusal is explained, and nothing is created.
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    writeFileSync(
      keyFile,
      JSON.stringify({
        type: 'service_account',
        client_email: email,
        private_key: other.export({ type: 'pkcs8', format: 'pem' }),
        token_uri: `${google.url}/token`,
      }),
    );
    const bad = await runCli([...ARGS, '--topic', 'never', '--credentials', keyFile, '--no-write-config'], {
      cwd: dir,
      env,
    });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /token endpoint refused the signed assertion \(invalid_grant/);
    assert.equal(google.topics.has('projects/my-proj-1/topics/never'), false);
  });

  it('without credentials it names every source it looked at and calls nothing', async () => {
    const { dir, env } = project();
    const from = google.log.length;
    const r = await runCli([...ARGS, '--no-write-config'], {
      cwd: dir,
      env: { ...env, GOOGLE_OAUTH_ACCESS_TOKEN: '' },
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /no Google credentials[\s\S]*--access-token[\s\S]*GOOGLE_APPLICATION_CREDENTIALS[\s\S]*gcloud auth print-access-token/,
    );
    assert.equal(google.log.length, from);
  });

  it('a rejected token is a clear error (401 UNAUTHENTICATED), with the way to a fresh one', async () => {
    const { dir, env } = project();
    const r = await runCli([...ARGS, '--access-token', 'expired', '--no-write-config'], { cwd: dir, env });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /create topic hookgate-gmail: Google answered 401 UNAUTHENTICATED.*gcloud auth print-access-token/,
    );
    assert.ok(!r.stderr.includes('expired'.repeat(2)));
  });

  it('reports an existing subscription that pushes elsewhere (exit 1) and says how to fix it, changing nothing', async () => {
    const { dir, env } = project();
    google.topics.set('projects/my-proj-1/topics/topic-two', { policy: {}, version: 0 });
    const old = {
      name: 'projects/my-proj-1/subscriptions/sub-two',
      topic: 'projects/my-proj-1/topics/topic-two',
      pushConfig: {
        pushEndpoint: 'https://old.example.com/push',
        oidcToken: { serviceAccountEmail: SA, audience: 'old' },
      },
    };
    google.subscriptions.set(old.name, old);
    const r = await runCli([...ARGS, '--topic', 'topic-two', '--subscription', 'sub-two', '--no-write-config'], {
      cwd: dir,
      env,
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /push endpoint is "https:\/\/old\.example\.com\/push", not "https:\/\/hooks\.example\.com\/hooks\/gmail-push"/,
    );
    assert.match(
      r.stderr,
      /gcloud pubsub subscriptions modify-push-config sub-two --project=my-proj-1 --push-endpoint=https:\/\/hooks\.example\.com\/hooks\/gmail-push/,
    );
    assert.deepEqual(google.subscriptions.get(old.name), old);
  });

  it('--print shows the gcloud commands and the block, and calls and writes nothing', async () => {
    const { dir, file, env } = project();
    const before = readFileSync(file, 'utf8');
    const from = google.log.length;
    const r = await runCli([...ARGS, '--print', '--audience', 'hookgate-gmail', '--labels', 'INBOX,Label_7'], {
      cwd: dir,
      env,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(google.log.length, from);
    assert.equal(readFileSync(file, 'utf8'), before);
    const commands = r.stdout.replace(/ \\\n\s+/g, ' ');
    assert.match(commands, /^gcloud pubsub topics create hookgate-gmail --project=my-proj-1$/m);
    assert.match(
      commands,
      /^gcloud pubsub topics add-iam-policy-binding hookgate-gmail --project=my-proj-1 --member=serviceAccount:gmail-api-push@system\.gserviceaccount\.com --role=roles\/pubsub\.publisher$/m,
    );
    assert.match(
      commands,
      /^gcloud pubsub subscriptions create hookgate-gmail-push --project=my-proj-1 --topic=hookgate-gmail --push-endpoint=https:\/\/hooks\.example\.com\/hooks\/gmail-push --push-auth-service-account=hookgate-push@my-proj-1\.iam\.gserviceaccount\.com --push-auth-token-audience=hookgate-gmail --ack-deadline=60$/m,
    );
    assert.match(r.stdout, /labels: \["INBOX", "Label_7"\],/);
    const json = await runCli([...ARGS, '--print', '--json'], { cwd: dir, env });
    const out = JSON.parse(json.stdout) as { commands: string[]; gmail: { audience: string } };
    assert.equal(out.commands.length, 4);
    assert.equal(out.gmail.audience, 'https://hooks.example.com/hooks/gmail-push');
  });

  it('refuses before calling Google: a different hooks.gmail already in the file, no config file, an http endpoint', async () => {
    const { dir, file, env } = project();
    writeFileSync(
      file,
      starterConfig(TOKEN).replace(
        '    mappings: [],',
        '    mappings: [],\n    gmail: { account: "bob@example.com" },',
      ),
    );
    const from = google.log.length;
    const r = await runCli(ARGS, { cwd: dir, env });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /not writing .*hookgate\.json5: it already has a hooks\.gmail section.*Nothing was created in Google Cloud/,
    );
    assert.match(r.stderr, /gmail: \{\n\s+account: "ada@example\.com"/, 'the block to paste');
    const none = await runCli(ARGS, { cwd: tempDir('hookgate-gmail-noconf-'), env });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no config file to write hooks\.gmail into[\s\S]*hookgate init/);
    const http = await runCli([...ARGS.slice(0, 7), 'http://hooks.example.com', ...ARGS.slice(8)], { cwd: dir, env });
    assert.equal(http.code, 1);
    assert.match(http.stderr, /--push-endpoint: Pub\/Sub pushes to https URLs only/);
    assert.equal(google.log.length, from);
  });
});
