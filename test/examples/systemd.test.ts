/**
 * examples/systemd/hookgate.service: checked by `systemd-analyze verify` where it is installed (skipped otherwise: CI
 * need not have systemd), and always against what hookgate's stop needs from it and the layout `init --service` writes.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { SERVICE_DIR, SERVICE_STATE_DIR } from '../../src/cli/init-command.js';
import { parseEnvFile } from '../../src/cli/env-file.js';
import { loadConfigFile } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema/index.js';
import { DEFAULT_KILL_GRACE_MS } from '../../src/providers/command.js';
import { ROOT, runCli } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';

const UNIT = join(ROOT, 'examples/systemd/hookgate.service');
const text = readFileSync(UNIT, 'utf8');

/** `Key=value` settings of the unit (comments and section headers left out); the last one of a key wins. */
const settings = new Map(
  text
    .split('\n')
    .filter((l) => /^[A-Za-z]+=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).trim()] as const),
);

describe('examples/systemd/hookgate.service', () => {
  it('is hardened, reloads with SIGHUP, and gives a stop the time hookgate takes', () => {
    for (const [key, value] of Object.entries({
      DynamicUser: 'yes',
      ProtectSystem: 'strict',
      StateDirectory: 'hookgate',
      StateDirectoryMode: '0700',
      NoNewPrivileges: 'yes',
      PrivateTmp: 'yes',
      ProtectHome: 'yes',
      RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
      KillMode: 'mixed',
      ExecReload: '/bin/kill -HUP $MAINPID',
    })) {
      assert.equal(settings.get(key), value, key);
    }
    assert.ok(!settings.has('MemoryDenyWriteExecute'), 'V8 needs writable executable memory');
    const graceSeconds = configSchema.parse({}).gateway.stopGraceSeconds;
    const timeout = /^(\d+)s$/.exec(settings.get('TimeoutStopSec') ?? '');
    assert.ok(timeout, `TimeoutStopSec in seconds: ${settings.get('TimeoutStopSec')}`);
    // The grace period, then the agents' SIGTERM → SIGKILL, then releasing runs and closing the store.
    assert.ok(
      Number(timeout[1]) >= graceSeconds + DEFAULT_KILL_GRACE_MS / 1000 + 2,
      `TimeoutStopSec=${timeout[1]}s leaves hookgate too little time`,
    );
  });

  it('runs the layout `init --service` writes: its config, its environment file, its state directory', async () => {
    const dir = tempDir('hookgate-unit-layout-');
    const r = await runCli(['init', '--service', '--dir', dir], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    // The files land in a temp dir here; on the machine, in the unit's paths (the defaults of --dir and --state-dir).
    assert.equal(
      settings.get('EnvironmentFile'),
      join(SERVICE_DIR, 'hookgate.env'),
      'not optional: the secrets are there',
    );
    assert.match(
      settings.get('ExecStart') ?? '',
      new RegExp(` serve --config ${join(SERVICE_DIR, 'hookgate.json5')}$`),
    );
    assert.equal(settings.get('StateDirectory'), basename(SERVICE_STATE_DIR));
    assert.equal(dirname(SERVICE_STATE_DIR), '/var/lib');
    assert.equal(settings.get('WorkingDirectory'), SERVICE_STATE_DIR);
    const env = Object.fromEntries(parseEnvFile(readFileSync(join(dir, 'hookgate.env'), 'utf8')));
    const config = loadConfigFile(join(dir, 'hookgate.json5'), { env });
    assert.equal(config.storage.driver === 'sqlite' && config.storage.path, join(SERVICE_STATE_DIR, 'hookgate.db'));
    assert.equal(config.admin.enabled, true);
  });

  it('passes systemd-analyze verify', (t) => {
    const probe = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) {
      t.skip('systemd-analyze is not installed here (CI need not have it); the unit was checked only for its settings');
      return;
    }
    // verify checks that ExecStart's program exists: where node is not /usr/bin/node, the copy names this node.
    const unit = join(tempDir('hookgate-unit-'), 'hookgate.service');
    writeFileSync(unit, existsSync('/usr/bin/node') ? text : text.replace('/usr/bin/node ', `${process.execPath} `));
    const r = spawnSync('systemd-analyze', ['verify', '--man=no', unit], { encoding: 'utf8' });
    // Unknown keys and bad values are only warnings (exit 0): any output at all is a failure.
    assert.equal(`${r.stdout}${r.stderr}`.trim(), '', 'systemd-analyze verify has something to say');
    assert.equal(r.status, 0);
  });
});
