/**
 * `hookgate doctor` on the layout of `init --service`: it reads the environment file as systemd would, checks the
 * config as the service loads it, and says whether the service's user can read the config and its secret files.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { blockedFor, secretFiles } from '../../src/cli/doctor-access.js';
import { runCli } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';

interface Line {
  status: string;
  what: string;
  detail: string;
  fix?: string;
}

/** A user name no system has: the doctor takes it for a DynamicUser=, which owns none of the files. */
const DYNAMIC = 'hookgate-doctor-test-nobody';

async function serviceLayout(): Promise<{ dir: string; etc: string; config: string }> {
  const dir = tempDir('hookgate-doctor-access-');
  chmodSync(dir, 0o755);
  const etc = join(dir, 'etc');
  const r = await runCli(['init', '--service', '--dir', etc, '--state-dir', join(dir, 'state')], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  return { dir, etc, config: join(etc, 'hookgate.json5') };
}

const doctor = async (dir: string, ...args: string[]) => {
  const r = await runCli(['doctor', '--offline', '--json', ...args], { cwd: dir });
  return { code: r.code, lines: JSON.parse(r.stdout) as Line[], stderr: r.stderr };
};

describe('cli: doctor, the files of a service', () => {
  it("reads the environment file next to the config, and finds the config readable by the unit's dynamic user", async () => {
    const { dir, config } = await serviceLayout();
    const r = await doctor(
      dir,
      '--config',
      config,
      '--service-user',
      DYNAMIC,
      '--env-file',
      join(dir, 'etc/hookgate.env'),
    );
    const by = (what: string) => r.lines.filter((l) => l.what === what);
    assert.match(by('env file')[0]?.detail ?? '', /2 variables set for these checks/);
    assert.equal(by('config')[0]?.status, 'ok', JSON.stringify(r.lines));
    assert.equal(by('service user')[0]?.status, 'ok');
    assert.match(by('service user')[0]!.detail, /not a user here: checked as a DynamicUser= one/);
    assert.equal(by('env file')[1]?.status, 'ok', 'the env file is private');
    assert.equal(by('sqlite driver')[0]?.status, 'ok');
    assert.equal(r.code, 0, JSON.stringify(r.lines.filter((l) => l.status === 'fail')));
  });

  it('a config the service user cannot read fails, with what to do; an exposed env file is a warning', async () => {
    const { dir, etc, config } = await serviceLayout();
    chmodSync(config, 0o600);
    chmodSync(join(etc, 'hookgate.env'), 0o644);
    const r = await doctor(dir, '--config', config, '--service-user', DYNAMIC);
    const user = r.lines.find((l) => l.what === 'service user')!;
    assert.equal(user.status, 'fail');
    assert.match(user.detail, /cannot read: .*hookgate\.json5 \(uid \d+ gid \d+ mode 0600\)/);
    assert.match(user.fix ?? '', /hookgate init --service/);
    const env = r.lines.filter((l) => l.what === 'env file').at(-1)!;
    assert.equal(env.status, 'warn');
    assert.match(env.fix ?? '', /^chmod 600 /);
    assert.equal(r.code, 1);
  });

  it('a secret file the service user cannot reach is named', async () => {
    const { dir, etc, config } = await serviceLayout();
    const secrets = join(dir, 'secrets');
    mkdirSync(secrets, { mode: 0o700 });
    writeFileSync(join(secrets, 'slack'), 'xoxb-secret', { mode: 0o644 });
    chmodSync(secrets, 0o700);
    writeFileSync(
      config,
      `{ hooks: { enabled: true, token: { file: "../secrets/slack" } }, storage: { driver: "sqlite", path: "${join(dir, 'state/hookgate.db')}" } }`,
    );
    chmodSync(config, 0o644);
    assert.deepEqual(secretFiles(config), [join(secrets, 'slack')]);
    const r = await doctor(dir, '--config', config, '--service-user', DYNAMIC, '--env-file', join(etc, 'hookgate.env'));
    const user = r.lines.find((l) => l.what === 'service user')!;
    assert.equal(user.status, 'fail');
    assert.match(user.detail, /secrets \(directory .* mode 0700: cannot be searched\)/);
  });

  it('judges by owner, group and other bits for a real user', () => {
    const dir = tempDir('hookgate-doctor-bits-');
    chmodSync(dir, 0o755);
    const file = join(dir, 'f');
    writeFileSync(file, 'x', { mode: 0o640 });
    chmodSync(file, 0o640);
    const uid = process.getuid!();
    const gid = process.getgid!();
    const stranger = { name: 'x', uid: uid + 4242, gids: [] };
    assert.equal(
      blockedFor(file, { name: 'me', uid: uid === 0 ? 4242 : uid, gids: [gid] }),
      undefined,
      'the group may read',
    );
    assert.match(blockedFor(file, stranger) ?? '', /mode 0640/);
    assert.equal(blockedFor(file, { name: 'root', uid: 0, gids: [] }), undefined);
  });
});
