/**
 * The embedded default (`npm start` with no config file) and its token file; new tokens; the starter config of
 * `hookgate init` (every value it shows must be valid).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import { embeddedDefault, embeddedTokenFile, newToken } from '../../src/config/defaults.js';
import { validateConfig } from '../../src/config/load.js';
import { ModelCatalog } from '../../src/config/model-catalog.js';
import { configuredChannelIds } from '../../src/config/lookup.js';
import { tempDir } from '../support/temp-dir.js';
import { parse } from './helpers.js';

describe('newToken', () => {
  it('is 32 random bytes, base64url (43 characters)', () => {
    const t = newToken();
    assert.match(t, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(Buffer.from(t, 'base64url').length, 32);
  });

  it('differs every time', () => {
    const seen = new Set(Array.from({ length: 50 }, newToken));
    assert.equal(seen.size, 50);
  });
});

describe('embeddedDefault', () => {
  let cwd: string;
  beforeEach(() => {
    cwd = tempDir('hookgate-default-');
  });

  it('takes the token from HOOKGATE_TOKEN (trimmed) and writes no file', () => {
    const d = embeddedDefault(cwd, { HOOKGATE_TOKEN: '  env-token-0123456789abcdef \n' });
    assert.equal(d.token, 'env-token-0123456789abcdef');
    assert.equal(d.generatedTokenFile, undefined);
    assert.equal((d.config.hooks as { token: string }).token, 'env-token-0123456789abcdef');
    assert.equal(existsSync(join(cwd, 'data', 'hook-token')), false);
  });

  it('without HOOKGATE_TOKEN, generates one once into ./data/hook-token (mode 0600)', () => {
    const d = embeddedDefault(cwd, {});
    const file = join(cwd, 'data', 'hook-token');
    assert.equal(d.generatedTokenFile, file);
    assert.equal(embeddedTokenFile(cwd), file);
    assert.match(d.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(readFileSync(file, 'utf8'), `${d.token}\n`);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  it('the next start reuses the kept token and reports nothing generated', () => {
    const first = embeddedDefault(cwd, {});
    const second = embeddedDefault(cwd, {});
    assert.equal(second.token, first.token);
    assert.equal(second.generatedTokenFile, undefined);
  });

  it('HOOKGATE_TOKEN wins over the kept token', () => {
    embeddedDefault(cwd, {});
    assert.equal(
      embeddedDefault(cwd, { HOOKGATE_TOKEN: 'from-env-0123456789abcdef' }).token,
      'from-env-0123456789abcdef',
    );
  });

  it('a blank HOOKGATE_TOKEN or an empty token file counts as none', () => {
    mkdirSync(join(cwd, 'data'), { recursive: true });
    writeFileSync(join(cwd, 'data', 'hook-token'), '\n');
    const d = embeddedDefault(cwd, { HOOKGATE_TOKEN: '   ' });
    assert.match(d.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(d.generatedTokenFile, join(cwd, 'data', 'hook-token'));
  });

  it('is a valid config: SQLite at ./data/hookgate.db, hooks on with the token, echo model, log channel', () => {
    const d = embeddedDefault(cwd, { HOOKGATE_TOKEN: 'env-token-0123456789abcdef' });
    const c = validateConfig(d.config, undefined, cwd, { env: {} });
    assert.equal(c.file, undefined);
    assert.equal(c.dir, cwd);
    assert.deepEqual(c.warnings, []);
    const { limits, ...gateway } = c.gateway; // the limits' defaults: test/config/load.test.ts
    assert.deepEqual(gateway, { bind: '127.0.0.1', port: 18789, trustedProxies: [], stopGraceSeconds: 10 });
    assert.equal(limits.headersTimeoutMs, 10_000);
    assert.deepEqual(c.storage, {
      driver: 'sqlite',
      path: './data/hookgate.db',
      synchronous: 'normal',
      checkpoints: 'auto',
    });
    assert.equal(c.hooks.enabled, true);
    assert.equal(c.hooks.token, 'env-token-0123456789abcdef');
    assert.equal(c.hooks.path, '/hooks');
    assert.equal(c.agents.defaults.model, 'echo/echo');
    assert.deepEqual(c.agents.list, [{ id: 'main', default: true }]);
    assert.equal(new ModelCatalog(c).resolveAllowed(c.agents.defaults.model).ok, true);
    assert.deepEqual(c.channels.default, { channel: 'log' });
    assert.deepEqual(c.channels.log, {});
    assert.deepEqual(configuredChannelIds(c), ['log']);
    // The admin listener is on, with a token generated once into ./data/admin-token (0600), kept across starts.
    assert.equal(c.admin.enabled, true);
    assert.deepEqual({ bind: c.admin.bind, port: c.admin.port }, { bind: '127.0.0.1', port: 18790 });
    const file = join(cwd, 'data', 'admin-token');
    assert.equal(c.admin.token, readFileSync(file, 'utf8').trim());
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.notEqual(c.admin.token, c.hooks.token);
    assert.equal(embeddedDefault(cwd, {}).adminToken, c.admin.token);
    assert.equal(
      embeddedDefault(cwd, { HOOKGATE_ADMIN_TOKEN: 'admin-from-env-0123456789' }).adminToken,
      'admin-from-env-0123456789',
    );
  });
});

describe('the starter config of `hookgate init`', () => {
  it('is valid as written, with no warnings, and its values match the defaults', async () => {
    const { starterConfig } = await import('../../src/cli/starter-config.js');
    const token = newToken();
    const dir = tempDir('hookgate-starter-');
    const c = parse(starterConfig(token), {}, dir);
    assert.deepEqual(c.warnings, []);
    assert.equal(c.hooks.token, token);
    const d = parse({ hooks: { enabled: true, token }, channels: { default: { channel: 'log' }, log: {} } }, {}, dir);
    assert.deepEqual({ ...c.gateway }, { ...d.gateway });
    assert.deepEqual(c.storage, d.storage);
    assert.deepEqual(c.hooks, d.hooks);
    assert.deepEqual(c.agents, d.agents);
    assert.deepEqual(c.heartbeat, d.heartbeat);
    assert.deepEqual(c.channels, d.channels);
    assert.deepEqual(c.logging, d.logging);
  });
});
