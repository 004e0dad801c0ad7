/**
 * A PostgreSQL server of the test's own (never the machine's shared one, which other tests use): Debian's
 * binaries, `initdb` into a temp dir, `pg_ctl start` on a free port with its socket in that dir, listening on
 * 127.0.0.1 only. A test may restart or stop it at will; `cleanup()` stops it (immediate) and removes the dir.
 *
 * initdb refuses to run as root: as root, the dir is given to the `postgres` user and the binaries run through
 * `runuser -u postgres --`. `privatePostgresUnavailable()` says why it cannot be done here (no binaries, no such
 * user), for a skip (a failure under HOOKGATE_REQUIRE_SERVICES=1).
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { removeDir, tempDir } from './temp-dir.js';

const run = promisify(execFile);

/** Servers still running: stopped (immediate) when the test process exits, before temp-dir removes their dirs. */
const running = new Map<string, () => void>();
process.prependOnceListener('exit', () => {
  for (const stop of running.values()) {
    try {
      stop();
    } catch {
      /* it is gone */
    }
  }
});

/** The newest /usr/lib/postgresql/<major>/bin with initdb, or HOOKGATE_TEST_PG_BIN. */
export function pgBinDir(): string | undefined {
  if (process.env.HOOKGATE_TEST_PG_BIN) return process.env.HOOKGATE_TEST_PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin/initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] ? join(root, majors[0], 'bin') : undefined;
}

const isRoot = () => process.getuid?.() === 0;

async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const { stdout: uid } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
  } catch {
    return undefined;
  }
}

/** Why a private server cannot be started here, or undefined. */
export async function privatePostgresUnavailable(): Promise<string | undefined> {
  const bin = pgBinDir();
  if (!bin) return 'no PostgreSQL server binaries (initdb) under /usr/lib/postgresql';
  if (isRoot() && !(await postgresUser())) return 'running as root and there is no postgres user to run initdb as';
  return undefined;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise((resolve) => s.close(resolve));
  return port;
}

export interface PrivatePostgres {
  port: number;
  /** The admin URL (user postgres, database postgres). */
  url: string;
  /** `url` with another database. */
  urlOf(database: string): string;
  /** `pg_ctl restart -m <mode>` (default fast): every connection is cut; the server is back when it resolves. */
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** The server's log so far. */
  log(): Promise<string>;
  cleanup(): Promise<void>;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const why = await privatePostgresUnavailable();
  if (why) throw new Error(why);
  const bin = pgBinDir()!;
  const dir = tempDir('hookgate-pg-');
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  const user = isRoot() ? await postgresUser() : undefined;
  if (user) chownSync(dir, user.uid, user.gid);
  const pg = (tool: string, args: string[]) => {
    const cmd = join(bin, tool);
    return user ? run('runuser', ['-u', 'postgres', '--', cmd, ...args], { cwd: dir }) : run(cmd, args, { cwd: dir });
  };
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  // max_connections: a few nodes with their pools and the test's own connections.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`;
  const start = async () =>
    void (await pg('pg_ctl', ['-D', data, '-o', options, '-l', logFile, '-w', '-t', '60', 'start']));
  const stop = async (mode: 'fast' | 'immediate' = 'fast') =>
    void (await pg('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']));
  await start();
  running.set(dir, () => {
    const args = [join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop'];
    if (user) execFileSync('runuser', ['-u', 'postgres', '--', ...args], { stdio: 'ignore' });
    else execFileSync(args[0]!, args.slice(1), { stdio: 'ignore' });
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let up = true;
  return {
    port,
    url,
    urlOf: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async restart(mode = 'fast') {
      await stop(mode);
      await start();
    },
    async stop(mode = 'fast') {
      await stop(mode);
      up = false;
    },
    async start() {
      await start();
      up = true;
    },
    async log() {
      const { readFile } = await import('node:fs/promises');
      return readFile(logFile, 'utf8').catch(() => '');
    },
    async cleanup() {
      if (up) await stop('immediate').catch(() => undefined);
      up = false;
      running.delete(dir);
      removeDir(dir);
    },
  };
}
