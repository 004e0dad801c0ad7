/**
 * Reloading (docs/reference.md#configuration): changing the config file while serving reloads it (SIGHUP too); an
 * invalid new file is rejected with a log line and the old config stays active. `storage` and `gateway.bind/port` apply
 * only after a restart.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { type App, startApp } from '../../src/app.js';
import { createLogger } from '../../src/log.js';
import { CLI, ROOT } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';
import { waitFor } from '../support/wait.js';

type LogLine = Record<string, unknown> & { msg?: string; level?: number };

function captureLogger() {
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as LogLine);
      cb();
    },
  });
  return { logger: createLogger('info', { destination, pretty: false }), lines };
}

const configText = (hooks: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    gateway: { port: 0 },
    storage: { path: './data/hookgate.db' },
    hooks: { enabled: true, token: TOKEN, ...hooks },
    logging: { level: 'info' },
    ...extra,
  });

describe('reload (App.reload, as SIGHUP calls it)', () => {
  let dir: string;
  let file: string;
  let app: App;
  let log: ReturnType<typeof captureLogger>;
  before(async () => {
    dir = tempDir('hookgate-reload-');
    file = join(dir, 'hookgate.json5');
    writeFileSync(file, configText({ path: '/hooks' }));
    log = captureLogger();
    app = await startApp({ configFile: file, cwd: dir, env: { HOOKGATE_SQLITE_WRITER: 'inline' }, logger: log.logger });
  });
  after(async () => {
    await app?.close();
  });

  it('a valid new file applies', async () => {
    writeFileSync(file, configText({ path: '/in' }));
    assert.equal(await app.reload(), true);
    assert.equal(app.config().hooks.path, '/in');
    assert.ok(log.lines.some((l) => l.msg === 'config reloaded'));
  });

  it('an invalid new file is rejected with an error log listing the problems; the old config stays', async () => {
    const before = app.config();
    writeFileSync(file, configText({ path: '/', bogus: 1 }));
    assert.equal(await app.reload(), false);
    assert.equal(app.config(), before);
    const line = log.lines.find((l) => l.msg === 'config reload rejected; the previous config stays active');
    assert.ok(line, 'an error line is logged');
    assert.equal(line.level, 50);
    assert.ok(Array.isArray(line.issues));
    assert.ok(
      (line.issues as unknown[]).some(
        (i) => JSON.stringify(i) === JSON.stringify({ path: 'hooks', message: 'unknown key: bogus' }),
      ),
    );
  });

  it('a weak admin token on a non-loopback bind is rejected like any invalid file; the old config stays', async () => {
    const before = app.config();
    writeFileSync(
      file,
      configText({ path: '/in' }, { admin: { enabled: true, bind: '0.0.0.0', port: 0, token: 'weak-admin-2' } }),
    );
    assert.equal(await app.reload(), false);
    assert.equal(app.config(), before);
    const line = log.lines.findLast((l) => l.msg === 'config reload rejected; the previous config stays active');
    assert.ok(
      (line!.issues as Array<{ path: string; message: string }>).some(
        (i) => i.path === 'admin.token' && i.message.includes('hookgate token'),
      ),
      JSON.stringify(line),
    );
    assert.ok(!JSON.stringify(log.lines).includes('weak-admin-2'), 'the token is never logged');
  });

  it('a file that is not JSON5 is rejected too', async () => {
    const before = app.config();
    writeFileSync(file, '{ hooks: ');
    assert.equal(await app.reload(), false);
    assert.equal(app.config(), before);
  });

  it('storage and gateway.bind/port changes are accepted but flagged as needing a restart', async () => {
    const port = app.port;
    writeFileSync(
      file,
      configText({ path: '/in' }, { gateway: { port: port === 1 ? 2 : port + 1 }, storage: { path: './other.db' } }),
    );
    assert.equal(await app.reload(), true);
    const warn = log.lines.find((l) => l.msg === 'config keys changed that apply only after a restart');
    assert.ok(warn);
    assert.deepEqual(warn.keys, ['storage', 'gateway.bind/port']);
    assert.equal(app.port, port);
  });
});

describe('reload on file change', () => {
  let dir: string;
  let app: App;
  after(async () => {
    await app?.close();
  });

  it('writing the file reloads it', async () => {
    dir = tempDir('hookgate-watch-');
    const file = join(dir, 'hookgate.json5');
    writeFileSync(file, configText({ path: '/hooks' }));
    const { logger } = captureLogger();
    app = await startApp({
      configFile: file,
      cwd: dir,
      env: { HOOKGATE_SQLITE_WRITER: 'inline' },
      logger,
      watchConfig: true,
    });
    await new Promise((r) => setTimeout(r, 100));
    writeFileSync(file, configText({ path: '/changed' }));
    await waitFor('the changed path', () => app.config().hooks.path === '/changed');
  });
});

describe('the embedded default', () => {
  let dir: string;
  let app: App;
  after(async () => {
    await app?.close();
  });

  it('has no file to reload', async () => {
    dir = tempDir('hookgate-embedded-');
    const { logger } = captureLogger();
    app = await startApp({
      configFile: undefined,
      cwd: dir,
      env: { HOOKGATE_SQLITE_WRITER: 'inline', HOOKGATE_TOKEN: TOKEN },
      logger,
    });
    assert.equal(app.config().file, undefined);
    assert.equal(await app.reload(), false);
  });
});

describe('SIGHUP (hookgate serve)', () => {
  let dir: string;
  let pid: number | undefined;
  after(() => {
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  });

  it('re-reads the config file', { timeout: 30_000 }, async () => {
    dir = tempDir('hookgate-sighup-');
    const file = join(dir, 'hookgate.json5');
    writeFileSync(file, configText({ path: '/hooks' }));
    const proc = spawn(process.execPath, [CLI, 'serve', '--config', file], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOOKGATE_SQLITE_WRITER: 'inline' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    pid = proc.pid;
    const lines: LogLine[] = [];
    let buf = '';
    proc.stdout.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          lines.push(JSON.parse(l) as LogLine);
        } catch {
          /* not a log line */
        }
      }
    });
    let stderr = '';
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));

    await waitFor(
      'the listening line or an exit',
      () => lines.some((l) => l.msg === 'hookgate listening') || proc.exitCode !== null,
      20_000,
    ).catch(() => {});
    assert.ok(
      lines.some((l) => l.msg === 'hookgate listening'),
      `serve did not start: ${stderr}`,
    );

    // Invalid: rejected, logged.
    writeFileSync(file, configText({ path: '/' }));
    proc.kill('SIGHUP');
    await waitFor('the rejection line', () =>
      lines.some((l) => l.msg === 'config reload rejected; the previous config stays active'),
    );
    // Valid: applied.
    writeFileSync(file, configText({ path: '/other' }));
    proc.kill('SIGHUP');
    await waitFor('the reloaded line', () => lines.some((l) => l.msg === 'config reloaded'));
    assert.equal(proc.exitCode, null, 'still running');

    proc.kill('SIGTERM');
    assert.equal(await exited, 0);
    pid = undefined;
  });
});

describe('admin settings at reload', () => {
  it('admin.enabled/bind/port apply at the next start; a new admin.token applies at once (not flagged)', async () => {
    const { restartOnlyChanges } = await import('../../src/generation.js');
    const { parse } = await import('./helpers.js');
    const base = parse({ admin: { enabled: true, token: 'admin-token-0123456789', port: 18801 } });
    assert.deepEqual(
      restartOnlyChanges(base, parse({ admin: { enabled: true, token: 'admin-token-0123456789', port: 18802 } })),
      ['admin.enabled/bind/port'],
    );
    assert.deepEqual(restartOnlyChanges(base, parse({ admin: { enabled: false, port: 18801 } })), [
      'admin.enabled/bind/port',
    ]);
    assert.deepEqual(
      restartOnlyChanges(base, parse({ admin: { enabled: true, token: 'another-admin-token-0123', port: 18801 } })),
      [],
    );
  });
});
