/**
 * Starts the real hookgate process (the built CLI: `node dist/cli/main.js serve`) in a temp dir with a config,
 * for end-to-end tests. scripts/test.mjs (`npm test`, or `node scripts/test.mjs <files>`) builds dist first.
 *
 * The store: SQLite at `<dir>/data/hookgate.db` by default. `HOOKGATE_TEST_STORE=postgres` gives every server
 * started here a fresh PostgreSQL database instead (test/support/pg-database.ts; dropped by `cleanup()`), except a
 * server whose test is SQLite-specific: one started with `store: 'sqlite'` (the test reads the SQLite file, or tests
 * WAL, file faults or file modes), one whose config names its own `storage`, and one with a raw-text config. A
 * server can also be put on a given database (`database`, e.g. a cluster's shared one; not dropped by `cleanup()`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './paths.js';
import { createTestDatabase, type TestDatabase } from './pg-database.js';
import { removeDir, tempDir } from './temp-dir.js';
import { TOKEN } from './token.js';

export const CLI = join(ROOT, 'dist/cli/main.js');
export { ROOT, TOKEN };

/** The store a test server is on. */
export type TestStorage = { driver: 'sqlite'; path: string } | { driver: 'postgres'; url: string; db: TestDatabase };

/** The store of each server started here, by its dir (test/support/db.ts and runtime-kit.ts look it up). */
export const storageByDir = new Map<string, TestStorage>();

/** The store `HOOKGATE_TEST_STORE` asks for: `postgres`, or `sqlite` (the default). */
export function testStoreKind(): 'sqlite' | 'postgres' {
  const v = (process.env.HOOKGATE_TEST_STORE ?? '').trim().toLowerCase();
  if (v === '' || v === 'sqlite') return 'sqlite';
  if (v === 'postgres' || v === 'postgresql' || v === 'pg') return 'postgres';
  throw new Error(`HOOKGATE_TEST_STORE=${v}: expected sqlite or postgres`);
}

/** True when the suite runs on PostgreSQL: a SQLite-specific test skips itself with this as the reason. */
export const onPostgres = (): string | false =>
  testStoreKind() === 'postgres' ? 'SQLite-specific (HOOKGATE_TEST_STORE=postgres)' : false;

export interface Hookgate {
  url: string;
  dir: string;
  configFile: string;
  storage: TestStorage;
  proc: ChildProcess;
  /** Every stdout/stderr line so far (JSON log lines are parsed into `logs`). */
  lines: string[];
  logs: Array<Record<string, unknown>>;
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  waitForLog(pred: (l: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
  kill9(): Promise<void>;
  /** Start the process again on the same dir and config (after a stop or kill). */
  restart(): Promise<void>;
  cleanup(): Promise<void>;
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | null;
  text: string;
}

/** A config object (merged over a minimal base) or raw JSON5 text. */
export interface StartOptions {
  config?: Record<string, unknown> | string;
  env?: Record<string, string>;
  dir?: string;
  /** 'sqlite': this server keeps SQLite even under HOOKGATE_TEST_STORE=postgres (a SQLite-specific test). */
  store?: 'sqlite' | 'postgres';
  /** Run on this PostgreSQL database (made by the caller, who drops it). */
  database?: TestDatabase;
}

export async function startHookgate(opts: StartOptions = {}): Promise<Hookgate> {
  const dir = opts.dir ?? tempDir('hookgate-e2e-');
  const configFile = join(dir, 'hookgate.json5');
  const ownsStorage = typeof opts.config === 'string' || (opts.config !== undefined && 'storage' in opts.config);
  const wantsPostgres = opts.database !== undefined || (!ownsStorage && (opts.store ?? testStoreKind()) === 'postgres');
  let storage: TestStorage = { driver: 'sqlite', path: join(dir, 'data/hookgate.db') };
  let ownDb: TestDatabase | undefined;
  if (wantsPostgres) {
    const db = opts.database ?? (ownDb = await createTestDatabase());
    storage = { driver: 'postgres', url: db.url, db };
  }
  const text =
    typeof opts.config === 'string'
      ? opts.config
      : JSON.stringify(
          deepMerge(
            {
              gateway: { port: 0 },
              storage:
                storage.driver === 'postgres'
                  ? { driver: 'postgres', url: storage.url, poolSize: 5 }
                  : { driver: 'sqlite', path: './data/hookgate.db' },
              hooks: { enabled: true, token: TOKEN },
              logging: { level: 'debug' },
            },
            opts.config ?? {},
          ),
          null,
          2,
        );
  writeFileSync(configFile, text);
  storageByDir.set(dir, storage);

  const hg = {
    url: '',
    dir,
    configFile,
    storage,
    proc: undefined as unknown as ChildProcess,
    lines: [] as string[],
    logs: [] as Array<Record<string, unknown>>,
  } as Hookgate;

  const launch = async () => {
    const proc = spawn(process.execPath, [CLI, 'serve', '--config', configFile], {
      cwd: dir,
      env: { ...process.env, HOOKGATE_TOKEN: '', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    hg.proc = proc;
    const onLine = (line: string) => {
      hg.lines.push(line);
      try {
        hg.logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        /* plain line */
      }
    };
    createInterface({ input: proc.stdout! }).on('line', onLine);
    createInterface({ input: proc.stderr! }).on('line', onLine);
    // The "listening" line is logged at info: configs given to this harness must not set a higher level. 30 s: three
    // nodes starting together on a loaded 2-core CI machine took over 10 s to migrate and listen.
    try {
      const listening = await Promise.race([
        hg.waitForLog((l) => l.msg === 'hookgate listening', 30_000),
        new Promise<never>((_, reject) =>
          proc.once('exit', (code) =>
            reject(new Error(`hookgate exited with ${code} before listening:\n${hg.lines.join('\n')}`)),
          ),
        ),
      ]);
      hg.url = listening.url as string;
    } catch (err) {
      proc.kill('SIGKILL');
      throw err;
    }
  };
  /** The first start failed: nothing of it is kept (its database, its dir). */
  const cleanUpFailedStart = async (err: unknown) => {
    await ownDb?.drop().catch(() => undefined);
    if (!opts.dir) removeDir(dir);
    throw err;
  };

  hg.waitForLog = (pred, timeoutMs = 5000) =>
    new Promise((resolve, reject) => {
      const start = Date.now();
      const seen = hg.logs.length;
      const check = () => {
        const found = hg.logs.slice(seen > 0 ? 0 : 0).find(pred);
        if (found) return resolve(found);
        if (Date.now() - start > timeoutMs)
          return reject(
            new Error(`log line not seen within ${timeoutMs} ms; last lines:\n${hg.lines.slice(-20).join('\n')}`),
          );
        setTimeout(check, 20);
      };
      check();
    });

  hg.post = (path, body = {}, headers = {}) =>
    request(`${hg.url}${path}`, {
      method: 'POST',
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
    });

  const exited = () =>
    new Promise<void>((resolve) =>
      hg.proc.exitCode !== null || hg.proc.signalCode !== null ? resolve() : hg.proc.once('exit', () => resolve()),
    );
  hg.stop = async () => {
    hg.proc.kill('SIGTERM');
    await exited();
  };
  hg.kill9 = async () => {
    hg.proc.kill('SIGKILL');
    await exited();
  };
  hg.restart = async () => {
    hg.logs.length = 0;
    await launch();
  };
  hg.cleanup = async () => {
    if (hg.proc.exitCode === null && hg.proc.signalCode === null) {
      // Bounded: a server that does not stop (its store gone) must not hang the test's clean-up.
      const killer = setTimeout(() => hg.proc.kill('SIGKILL'), 20_000);
      await hg.stop();
      clearTimeout(killer);
    }
    if (!opts.dir) removeDir(dir);
    await ownDb?.drop();
  };
  await launch().catch(cleanUpFailedStart);
  return hg;
}

export async function request(url: string, init: RequestInit): Promise<HttpResult> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: Record<string, unknown> | null = null;
  try {
    body = text ? (JSON.parse(text) as Record<string, unknown>) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** Run the CLI to completion; `input` is written to its stdin (which is closed either way). */
export function runCli(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; input?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, HOOKGATE_TOKEN: '', HOOKGATE_CONFIG: '', ...opts.env },
    });
    p.stdin.end(opts.input ?? '');
    let stdout = '';
    let stderr = '';
    // Decoded as a stream: a chunk boundary inside a multi-byte character (a `…` in 64 KB of JSON) stays one character.
    p.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    // 'close', not 'exit': the pipes may still hold output when the process exits.
    p.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && prev && typeof prev === 'object' && !Array.isArray(prev)
        ? deepMerge(prev as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}
