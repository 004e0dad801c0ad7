/**
 * `hookgate import openclaw` end to end: the CLI converts an OpenClaw directory (config and transforms), refuses to
 * overwrite without --force, and the real server started on the written config serves OpenClaw's transforms
 * unchanged: one reading `ctx.url`, one returning `sessionKeySource: "static"` with `allowRequestSessionKey` off.
 * Runs on the store HOOKGATE_TEST_STORE names. (`npm run build` first: the server runs from dist.)
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import JSON5 from 'json5';
import { type Hookgate, runCli, startHookgate, TOKEN } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';

const OPENCLAW = `// ~/.openclaw/openclaw.json, as OpenClaw's webhook docs show it
{
  hooks: {
    enabled: true,
    token: "\${OPENCLAW_HOOKS_TOKEN}",
    path: "/hooks",
    allowedSessionKeyPrefixes: ["hook:"],
    mappings: [
      { match: { path: "kind" }, transform: { module: "kind.mjs" } },
      { match: { path: "fixed" }, transform: { module: "fixed.mjs" } },
    ],
  },
}
`;

describe('hookgate import openclaw (CLI and served)', { timeout: 60_000 }, () => {
  const ocDir = tempDir('openclaw-home-');
  const hgDir = tempDir('hookgate-imported-');
  let hg: Hookgate;
  let written: string;
  before(async () => {
    writeFileSync(join(ocDir, 'openclaw.json'), OPENCLAW);
    mkdirSync(join(ocDir, 'hooks/transforms'), { recursive: true });
    writeFileSync(
      join(ocDir, 'hooks/transforms/kind.mjs'),
      'export default (ctx) => ({ message: `kind=${ctx.url.searchParams.get("kind")} path=${ctx.url.pathname}` });\n',
    );
    writeFileSync(
      join(ocDir, 'hooks/transforms/fixed.mjs'),
      'export default () => ({ message: "fixed", sessionKey: "hook:fixed:1", sessionKeySource: "static" });\n',
    );
    const r = await runCli(['import', 'openclaw', join(ocDir, 'openclaw.json')], {
      cwd: hgDir,
      env: { OPENCLAW_HOOKS_TOKEN: TOKEN },
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^copied {4}hooks\.mappings: 2 mapping\(s\), verbatim$/m);
    assert.match(r.stdout, /config check: ok/);
    written = readFileSync(join(hgDir, 'hookgate.json5'), 'utf8');
    assert.equal(statSync(join(hgDir, 'hookgate.json5')).mode & 0o777, 0o600);
    // The server's own port and store (the e2e base); everything else as imported.
    hg = await startHookgate({
      dir: hgDir,
      config: JSON5.parse(written) as Record<string, unknown>,
      env: { OPENCLAW_HOOKS_TOKEN: TOKEN },
    });
  });
  after(async () => {
    await hg?.cleanup();
  });

  it('refuses to overwrite the written file without --force; --print writes nothing and reports on stderr', async () => {
    const again = await runCli(['import', 'openclaw', join(ocDir, 'openclaw.json')], {
      cwd: hgDir,
      env: { OPENCLAW_HOOKS_TOKEN: TOKEN },
    });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /exists; use --force to overwrite/);
    const printed = await runCli(['import', 'openclaw', join(ocDir, 'openclaw.json'), '--print'], {
      cwd: hgDir,
      env: { OPENCLAW_HOOKS_TOKEN: TOKEN },
    });
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /^\/\/ hookgate config imported from OpenClaw/);
    assert.match(printed.stderr, /config check: ok/);
    assert.ok(!printed.stdout.includes(TOKEN) && !printed.stderr.includes(TOKEN), 'the token is never printed');
  });

  it('exits 1 naming the problem when the result does not pass config check', async () => {
    const broken = join(ocDir, 'broken.json');
    writeFileSync(
      broken,
      JSON.stringify({
        hooks: {
          enabled: true,
          token: '${OPENCLAW_HOOKS_TOKEN}',
          mappings: [{ match: { path: 'x' }, messageTemplate: 'm', sessionKey: 'hook:{{id}}' }],
        },
      }),
    );
    const r = await runCli(['import', 'openclaw', broken, '--print'], {
      cwd: hgDir,
      env: { OPENCLAW_HOOKS_TOKEN: TOKEN },
    });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /config check: the result does not pass/);
    assert.match(r.stderr, /hooks\.mappings\[0\]\.sessionKey/);
  });

  it('an OpenClaw transform reading ctx.url works unchanged', async () => {
    const r = await hg.post('/hooks/kind?kind=deploy', {});
    assert.equal(r.status, 200, r.text);
    await hg.waitForLog((l) => typeof l.text === 'string' && l.text.includes('kind=deploy path=/hooks/kind'));
  });

  it('a transform marking its key sessionKeySource: "static" is accepted with allowRequestSessionKey off', async () => {
    const r = await hg.post('/hooks/fixed', {});
    assert.equal(r.status, 200, r.text);
    await hg.waitForLog((l) => typeof l.text === 'string' && l.text.includes('fixed'));
  });
});
