/**
 * `hookgate connect`: the config edit (comments and the rest of the file kept, an entry replaced only with --force),
 * the secret (made and printed once, or taken in and never printed; a private file either way), the catalogue, and
 * `--test` without a running service. The whole flow against the real server: test/e2e/connect.test.ts.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import JSON5 from 'json5';
import { addPresetEntry, connectComment, entryText, occupantOf } from '../../src/cli/connect-edit.js';
import { loadConfigFile } from '../../src/config/load.js';
import { senderPresets } from '../../src/hooks/mappings/presets/index.js';
import { runCli } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';

const STRIPE_SECRET = 'whsec_c2VjcmV0LW9mLXRoZS1zdHJpcGUtZW5kcG9pbnQ';

/** A fresh dir with the starter config of `hookgate init`. */
async function initDir(prefix: string): Promise<{ dir: string; file: string }> {
  const dir = tempDir(prefix);
  const r = await runCli(['init'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  return { dir, file: join(dir, 'hookgate.json5') };
}

type Presets = { hooks: { presets: Array<Record<string, unknown> | string> } };
const presetsIn = (text: string) => (JSON5.parse(text) as Presets).hooks.presets;
const presetsOf = (file: string) => presetsIn(readFileSync(file, 'utf8'));
const GH_SECRET = { file: './data/github-webhook-secret' };
const mode = (p: string) => statSync(p).mode & 0o777;

describe('connect: the config edit', () => {
  const comment = connectComment('GitHub', 'github', new Date('2026-11-28T00:00:00Z'));
  const entry = entryText({ use: 'github', path: 'github', secret: { file: './data/github-webhook-secret' } });

  it('appends to hooks.presets, or creates it (and hooks), keeping every comment', () => {
    const withList =
      '{\n  // mine\n  hooks: {\n    enabled: true, // on\n    presets: [\n      "gmail", /* kept */\n    ],\n  },\n}\n';
    const a = addPresetEntry(withList, entry, comment);
    assert.equal(a.kind, 'edited');
    if (a.kind !== 'edited') return;
    assert.equal(a.index, 1);
    for (const c of ['// mine', '// on', '/* kept */', `// ${comment}`]) assert.ok(a.text.includes(c), c);
    assert.deepEqual(presetsIn(a.text), ['gmail', { use: 'github', path: 'github', secret: GH_SECRET }]);

    for (const text of ['{\n  hooks: { enabled: true },\n}\n', '{\n  // no hooks yet\n  gateway: { port: 1 },\n}\n']) {
      const b = addPresetEntry(text, entry, comment);
      assert.equal(b.kind, 'edited', text);
      if (b.kind !== 'edited') continue;
      assert.deepEqual(presetsIn(b.text), [{ use: 'github', path: 'github', secret: GH_SECRET }]);
    }
  });

  it('replaces one entry in place (its earlier connect comment too), inline or on its own lines; refuses what it cannot edit', () => {
    const old = connectComment('GitHub', 'github', new Date('2025-01-01T00:00:00Z'));
    const text = [
      '{',
      '  hooks: {',
      '    presets: [',
      `      // ${old}`,
      '      { use: "github", secret: "old" },',
      '      { use: "stripe", secret: "s" }, // my note',
      '    ],',
      '  },',
      '}',
      '',
    ].join('\n');
    const r = addPresetEntry(text, entry, comment, 0);
    assert.equal(r.kind, 'edited');
    if (r.kind !== 'edited') return;
    assert.equal(r.text.split('written by `hookgate connect github`').length, 2, 'one connect comment, the new one');
    assert.ok(r.text.includes('// my note'));
    assert.deepEqual(presetsIn(r.text), [
      { use: 'github', path: 'github', secret: GH_SECRET },
      { use: 'stripe', secret: 's' },
    ]);
    const inline = addPresetEntry(
      '{ hooks: { presets: [{ use: "github", secret: "old" }, "gmail"] } }',
      entry,
      comment,
      0,
    );
    assert.equal(inline.kind, 'edited');
    if (inline.kind === 'edited')
      assert.deepEqual(presetsIn(inline.text), [{ use: 'github', path: 'github', secret: GH_SECRET }, 'gmail']);
    assert.equal(addPresetEntry('{ hooks: { presets: "github" } }', entry, comment).kind, 'refused');
    assert.equal(addPresetEntry('{ hooks: "x" }', entry, comment).kind, 'refused');
  });

  it('finds what already takes a path: a preset entry (path or name), a custom mapping, the gmail preset', () => {
    const presets = ['gmail', { use: 'stripe' }, { use: 'github', path: '/ci/' }];
    const raw = { hooks: { presets, mappings: [{ match: { path: 'alerts' } }] } };
    assert.deepEqual(occupantOf(raw, 'stripe'), { kind: 'preset', index: 1, at: 'hooks.presets[1] (stripe)' });
    assert.deepEqual(occupantOf(raw, 'ci'), { kind: 'preset', index: 2, at: 'hooks.presets[2] (github)' });
    assert.equal(occupantOf(raw, 'alerts')?.kind, 'mapping');
    assert.equal(occupantOf(raw, 'gmail')?.kind, 'gmail');
    assert.equal(occupantOf(raw, 'github'), undefined);
  });
});

describe('connect: the command', () => {
  it('github: the entry written into the starter config (comments kept, valid), the secret made, printed once, kept 0600', async () => {
    const { dir, file } = await initDir('hookgate-connect-gh-');
    const before = readFileSync(file, 'utf8');
    const r = await runCli(['connect', 'github'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const after = readFileSync(file, 'utf8');
    for (const line of before.split('\n').filter((l) => l.includes('//')))
      assert.ok(after.includes(line), `comment lost: ${line}`);
    assert.deepEqual(presetsOf(file), [{ use: 'github', path: 'github', secret: GH_SECRET }]);
    const secretFile = join(dir, 'data/github-webhook-secret');
    const secret = readFileSync(secretFile, 'utf8').trim();
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
    assert.equal(mode(secretFile), 0o600);
    assert.equal(mode(join(dir, 'data')), 0o700);
    assert.equal(mode(file), 0o600, 'the config keeps its mode');
    assert.equal(r.stdout.split(secret).length, 2, 'the secret is printed exactly once');
    assert.ok(!r.stderr.includes(secret));
    assert.match(r.stdout, /Secret: paste it into GitHub/);
    assert.match(
      r.stdout,
      /URL to paste into GitHub:\n {2}http:\/\/127\.0\.0\.1:18789\/hooks\/github\n.*public HTTPS URL/,
    );
    assert.match(r.stdout, /Payload URL: http:\/\/127\.0\.0\.1:18789\/hooks\/github/);
    assert.match(r.stdout, /tick pull_request, issues, issue_comment, push/);
    assert.match(r.stdout, /hookgate connect github --test/);
    const config = loadConfigFile(file);
    assert.equal(config.hooks.presets.length, 1, 'the file loads, the secret read from its file');

    const again = await runCli(['connect', 'github'], { cwd: dir });
    assert.equal(again.code, 1);
    assert.match(
      again.stderr,
      /"github" is already taken by hooks\.presets\[0\] \(github\); pass --force to replace that entry/,
    );
    assert.equal(readFileSync(file, 'utf8'), after, 'nothing written');

    const options = [
      '--force',
      '--events',
      'issues,push',
      '--action',
      'wake',
      '--public-url',
      'https://hooks.example.com',
    ];
    const forced = await runCli(['connect', 'github', ...options], { cwd: dir });
    assert.equal(forced.code, 0, forced.stderr);
    assert.deepEqual(presetsOf(file), [
      { use: 'github', path: 'github', secret: GH_SECRET, events: ['issues', 'push'], action: 'wake' },
    ]);
    assert.equal(readFileSync(secretFile, 'utf8').trim(), secret, 'the secret GitHub has is kept');
    assert.ok(!forced.stdout.includes(secret), 'a kept secret is named by its file, not printed again');
    assert.match(forced.stdout, /URL to paste into GitHub:\n {2}https:\/\/hooks\.example\.com\/hooks\/github\n/);
    assert.match(forced.stdout, /tick issues, push/);
  });

  it('a path a custom mapping takes is refused, even with --force', async () => {
    const { dir, file } = await initDir('hookgate-connect-mapping-');
    const mapping = 'mappings: [{ match: { path: "github" }, action: "wake", textTemplate: "x" }],';
    writeFileSync(file, readFileSync(file, 'utf8').replace('mappings: [],', mapping));
    const r = await runCli(['connect', 'github', '--force'], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /"github" is already taken by hooks\.mappings\[0\]; --force replaces a preset entry only/);
    const other = await runCli(['connect', 'github', '--path', 'gh'], { cwd: dir });
    assert.equal(other.code, 0, other.stderr);
    assert.deepEqual(presetsOf(file)[0], { use: 'github', path: 'gh', secret: { file: './data/gh-webhook-secret' } });
  });

  it('stripe: the secret it shows is read from stdin, stored 0600, and on no output; without one, nothing is written', async () => {
    const { dir, file } = await initDir('hookgate-connect-stripe-');
    const before = readFileSync(file, 'utf8');
    const none = await runCli(['connect', 'stripe'], { cwd: dir });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /Stripe shows you the secret it signs with: give it to hookgate with --secret-file FILE/);
    assert.equal(readFileSync(file, 'utf8'), before);

    const r = await runCli(['connect', 'stripe', '--secret-file', '-', '--channel', 'log'], {
      cwd: dir,
      input: `${STRIPE_SECRET}\n`,
    });
    assert.equal(r.code, 0, r.stderr);
    for (const out of [r.stdout, r.stderr]) {
      assert.ok(!out.includes(STRIPE_SECRET) && !out.includes(STRIPE_SECRET.slice(6)), 'the secret is never printed');
    }
    assert.equal(readFileSync(join(dir, 'data/stripe-webhook-secret'), 'utf8').trim(), STRIPE_SECRET);
    assert.equal(mode(join(dir, 'data/stripe-webhook-secret')), 0o600);
    const entry = { use: 'stripe', path: 'stripe', secret: { file: './data/stripe-webhook-secret' }, channel: 'log' };
    assert.deepEqual(presetsOf(file), [entry]);
    assert.doesNotMatch(r.stdout, /Secret:/);
    assert.match(r.stdout, /Select events: payment_intent\.succeeded, /);
  });

  it('--secret-env references the variable; a secret the scheme refuses is refused, nothing written, not echoed', async () => {
    const { dir, file } = await initDir('hookgate-connect-env-');
    const r = await runCli(['connect', 'slack', '--secret-env', 'SLACK_SIGNING_SECRET'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(presetsOf(file), [{ use: 'slack', path: 'slack', secret: { env: 'SLACK_SIGNING_SECRET' } }]);
    assert.match(r.stdout, /set SLACK_SIGNING_SECRET where hookgate serve runs/);

    const before = readFileSync(file, 'utf8');
    const bad = 'whsec_not*base64!';
    const refused = await runCli(['connect', 'standard-webhooks', '--secret-file', '-'], { cwd: dir, input: bad });
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /the new hooks\.presets\[1\] would be invalid[\s\S]*whsec_ secret must be whsec_ followed by base64/,
    );
    assert.ok(!refused.stderr.includes(bad) && !refused.stdout.includes(bad));
    assert.equal(readFileSync(file, 'utf8'), before);
  });

  it('every sender of the catalogue connects into one file, which loads; Twilio, which signs its URL, needs --public-url', async () => {
    const { dir, file } = await initDir('hookgate-connect-all-');
    const twilio = await runCli(['connect', 'twilio', '--secret-file', '-'], { cwd: dir, input: STRIPE_SECRET });
    assert.equal(twilio.code, 1);
    assert.match(
      twilio.stderr,
      /Twilio signs the public URL it calls, which its entry names: pass it with --public-url/,
    );
    for (const p of senderPresets()) {
      const copied = p.setup.secret === 'sender' ? ['--secret-file', '-'] : [];
      const args = ['connect', p.name, '--public-url', 'https://hooks.example.com', ...copied];
      const r = await runCli(args, { cwd: dir, input: STRIPE_SECRET });
      assert.equal(r.code, 0, `${p.name}: ${r.stderr}`);
      assert.match(
        r.stdout,
        new RegExp(`URL to paste into .*:\\n {2}https://hooks\\.example\\.com/hooks/${p.name}\\n`),
      );
      assert.equal(r.stdout.includes('Secret: paste it into'), p.setup.secret === 'generate', p.name);
    }
    const loaded = loadConfigFile(file).hooks.presets.filter((e) => typeof e !== 'string');
    assert.deepEqual(
      loaded.map((e) => e.use),
      senderPresets().map((p) => p.name),
    );
    const entry = presetsOf(file).find((e) => typeof e !== 'string' && e.use === 'twilio') as Record<string, unknown>;
    assert.equal(entry.url, 'https://hooks.example.com/hooks/twilio');
  });

  it('--list prints the catalogue: each sender, its title, who chooses the secret and its worded events', async () => {
    const r = await runCli(['connect', '--list']);
    assert.equal(r.code, 0, r.stderr);
    for (const p of senderPresets()) {
      assert.ok(r.stdout.includes(`${p.name.padEnd(20)} ${p.title}\n`), p.name);
      for (const e of Object.keys(p.messages)) assert.ok(r.stdout.includes(e), `${p.name}: ${e}`);
    }
    assert.match(
      r.stdout,
      /github {15}GitHub\n {2}secret: hookgate makes it; you paste it into GitHub\n {2}events: pull_request, issues/,
    );
    assert.match(r.stdout, /stripe {15}Stripe\n {2}secret: Stripe shows it; you give it to hookgate/);
  });

  it('an unknown sender is an error listing the catalogue; so is none', async () => {
    for (const args of [['connect', 'gitbucket'], ['connect']]) {
      const r = await runCli(args, { cwd: tempDir('hookgate-connect-unknown-') });
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        args[1] ? /unknown sender "gitbucket"; the senders are:/ : /name the sender to connect; the senders are:/,
      );
      for (const p of senderPresets()) assert.ok(r.stderr.includes(`  ${p.name.padEnd(20)} ${p.title}`), p.name);
    }
  });

  it('--test: without the entry it says how to add it; with the service down, how to start it', async () => {
    const { dir, file } = await initDir('hookgate-connect-down-');
    const missing = await runCli(['connect', 'github', '--test'], { cwd: dir });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no github entry in hooks\.presets of .*: `hookgate connect github` adds one/);
    assert.equal((await runCli(['connect', 'github'], { cwd: dir })).code, 0);
    // A port nothing listens on: one just closed.
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    writeFileSync(file, readFileSync(file, 'utf8').replace('port: 18789', `port: ${port}`));
    const down = await runCli(['connect', 'github', '--test'], { cwd: dir });
    assert.equal(down.code, 1);
    const said = `hookgate is not running at http://127.0.0.1:${port}/hooks (ECONNREFUSED): start it (hookgate serve --config `;
    assert.ok(down.stderr.includes(said), down.stderr);
    assert.match(down.stderr, /hookgate\.json5; from a checkout, npm start\), then run this again/);
  });
});
