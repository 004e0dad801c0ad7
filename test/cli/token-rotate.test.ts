/** `hookgate token rotate` edits the config text (comments kept, the result valid) and prints the token once. */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import JSON5 from 'json5';
import { completionScript } from '../../src/cli/completion.js';
import { buildProgram } from '../../src/cli/program.js';
import { starterConfig } from '../../src/cli/starter-config.js';
import { notAfterFrom } from '../../src/cli/token-command.js';
import { newTokenId, rotateTokens, type RotateInput } from '../../src/cli/token-rotate-edit.js';
import { parseConfig } from '../../src/config/load.js';
import { runCli } from '../support/server.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

const now = new Date('2026-11-25T12:00:00Z');
const input = (over: Partial<RotateInput> = {}): RotateInput => ({
  section: 'hooks',
  id: 'new',
  token: 'N'.repeat(43),
  now,
  ...over,
});

function edited(text: string, over: Partial<RotateInput> = {}) {
  const r = rotateTokens(text, input(over));
  assert.equal(r.kind, 'edited', JSON.stringify(r));
  return r as Extract<typeof r, { kind: 'edited' }>;
}

describe('token rotate: the config edit', () => {
  it('moves a single hooks.token (as written, a secret reference too) into hooks.tokens as "default", appends the new one, keeps comments', () => {
    const text = `{
  // my settings
  hooks: {
    enabled: true,
    token: { file: "secrets/hook-token" }, // the senders' token
    path: "/in", /* kept */
  },
}
`;
    const r = edited(text);
    assert.equal(r.moved, true);
    assert.deepEqual(r.oldIds, ['default']);
    assert.match(r.text, /\/\/ my settings/);
    assert.match(r.text, /path: "\/in", \/\* kept \*\//);
    assert.match(r.text, /\/\/ added by `hookgate token rotate` at 2026-11-25T12:00:00Z/);
    const hooks = (JSON5.parse(r.text) as { hooks: Record<string, unknown> }).hooks;
    assert.equal(hooks.token, undefined);
    assert.deepEqual(hooks.tokens, [
      { id: 'default', token: { file: 'secrets/hook-token' } },
      { id: 'new', token: 'N'.repeat(43) },
    ]);
  });

  it('with notAfterOld: every old token without an expiry gets it (one-line and multi-line entries), the new one has none', () => {
    const text = `{
  hooks: {
    enabled: true,
    token: "\${HOOK_TOKEN}",
    tokens: [
      { id: "a", token: "aaaaaaaaaaaaaaaaaaaa" },
      {
        id: "b",
        token: "bbbbbbbbbbbbbbbbbbbb"
      },
      { id: "c", token: "cccccccccccccccccccc", notAfter: 5 },
    ],
  },
}`;
    const r = edited(text, { notAfterOld: '2026-11-26T12:00:00.000Z' });
    assert.deepEqual(r.oldIds, ['default', 'a', 'b', 'c']);
    assert.deepEqual(r.expiring, ['default', 'a', 'b']);
    const tokens = (JSON5.parse(r.text) as { hooks: { tokens: Array<Record<string, unknown>> } }).hooks.tokens;
    assert.deepEqual(
      tokens.map((t) => [t.id, t.notAfter ?? null]),
      [
        ['a', '2026-11-26T12:00:00.000Z'],
        ['b', '2026-11-26T12:00:00.000Z'],
        ['c', 5],
        ['default', '2026-11-26T12:00:00.000Z'],
        ['new', null],
      ],
    );
    assert.equal(tokens[3]!.token, '${HOOK_TOKEN}', 'the moved value as written: still a reference');
    const c = parseConfig(r.text, undefined, '/tmp', { env: { HOOK_TOKEN: 'd'.repeat(20) } });
    assert.equal(c.hooks.tokens?.length, 5);
    assert.equal(c.hooks.tokens?.[3]?.notAfter, Date.parse('2026-11-26T12:00:00Z'));
  });

  it('the starter config rotates into a valid config; a one-line section too', () => {
    const r = edited(starterConfig('s'.repeat(43)));
    assert.match(r.text, /A dedicated token for hook senders/, 'comments kept');
    const c = parseConfig(r.text, undefined, '/tmp', { env: {} });
    assert.deepEqual(
      c.hooks.tokens?.map((t) => t.id),
      ['default', 'new'],
    );
    assert.equal(c.hooks.token, undefined);
    const one = edited('{ hooks: { enabled: true, token: "abcdefghijklmnopqrstu" } }');
    assert.deepEqual((JSON5.parse(one.text) as { hooks: { tokens: unknown[] } }).hooks.tokens.length, 2);
  });

  it('admin section; refusals: no section, a taken id, tokens not a list, not JSON5', () => {
    const r = edited('{ admin: { enabled: true, tokens: [{ id: "x", token: "xxxxxxxxxxxxxxxxxxxx" }] } }', {
      section: 'admin',
    });
    assert.deepEqual(
      (JSON5.parse(r.text) as { admin: { tokens: Array<{ id: string }> } }).admin.tokens.map((t) => t.id),
      ['x', 'new'],
    );
    assert.match(JSON.stringify(rotateTokens('{ hooks: {} }', input({ section: 'admin' }))), /no admin section/);
    assert.match(
      JSON.stringify(rotateTokens('{ hooks: { token: "t" } }', input({ id: 'default' }))),
      /already has the id \\"default\\"/,
    );
    assert.match(JSON.stringify(rotateTokens('{ hooks: { tokens: {} } }', input())), /is not a list/);
    assert.equal(rotateTokens('{ hooks: ', input()).kind, 'refused');
  });

  it('default ids: the UTC date, then -2, -3; --not-after-old takes a duration or a zoned date-time', () => {
    assert.equal(newTokenId([], now), '2026-11-25');
    assert.equal(newTokenId(['2026-11-25', '2026-11-25-2'], now), '2026-11-25-3');
    assert.equal(notAfterFrom('24h', now), '2026-11-26T12:00:00.000Z');
    assert.equal(notAfterFrom('0', now), now.toISOString());
    assert.equal(notAfterFrom('2026-12-01T00:00:00+01:00', now), '2026-11-30T23:00:00.000Z');
    assert.throws(() => notAfterFrom('tomorrow', now), /--not-after-old/);
    assert.throws(() => notAfterFrom('2026-12-01T00:00:00', now), /with a zone/, 'a local time is refused');
  });
});

describe('hookgate token rotate (the CLI)', { timeout: 60_000 }, () => {
  it('is a subcommand of token, completed with its options; plain `hookgate token` still prints a token', async () => {
    const script = completionScript(await buildProgram(), 'bash');
    assert.match(script, /'token'\) echo 'rotate /);
    assert.match(script, /'token rotate'\) echo '--admin --id --not-after-old /);
    const plain = await runCli(['token']);
    assert.equal(plain.code, 0);
    assert.match(plain.stdout, /^[A-Za-z0-9_-]{43}\n$/);
  });

  const dir = tempDir('hookgate-rotate-');
  after(() => removeDir(dir));

  it('prints only the token on stdout, writes the file (mode kept), and says what to do next on stderr', async () => {
    const file = join(dir, 'hookgate.json5');
    writeFileSync(file, starterConfig('o'.repeat(43)), { mode: 0o600 });
    const r = await runCli(['token', 'rotate', '--config', file, '--not-after-old', '1h']);
    assert.equal(r.code, 0, r.stderr);
    const token = r.stdout.trim();
    assert.match(token, /^[A-Za-z0-9_-]{43}$/, 'a 32-byte base64url token, alone');
    assert.match(
      r.stderr,
      /added hooks\.tokens entry "\d{4}-\d{2}-\d{2}" .*hooks\.token moved into hooks\.tokens as "default"/,
    );
    assert.match(r.stderr, /the old token "default" is accepted until /);
    assert.match(r.stderr, /SIGHUP/);
    assert.ok(!r.stderr.includes(token), 'the token is printed once');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const config = parseConfig(readFileSync(file, 'utf8'), file, dir, { env: {} });
    assert.deepEqual(
      config.hooks.tokens?.map((t) => t.token),
      ['o'.repeat(43), token],
    );

    const admin = await runCli(['token', 'rotate', '--admin', '--id', 'ops-1', '--json', '--config', file]);
    assert.equal(admin.code, 0, `the starter config has an admin section: ${admin.stderr}`);
    assert.equal((JSON.parse(admin.stdout) as Record<string, unknown>).id, 'ops-1');

    const again = await runCli(['token', 'rotate', '--id', 'ci', '--json', '--config', file]);
    assert.equal(again.code, 0, again.stderr);
    const out = JSON.parse(again.stdout) as Record<string, unknown>;
    assert.equal(out.id, 'ci');
    assert.equal(out.movedSingleToken, false);
    const bad = await runCli(['token', 'rotate', '--id', 'no spaces', '--config', file]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--id: 1-64 letters/);
  });

  it('without a config file: says to write one with hookgate init, changes nothing', async () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    const r = await runCli(['token', 'rotate'], { cwd: empty });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /no config file .*embedded default has one token .*hookgate init/s);
  });
});
