#!/usr/bin/env node
// CLI start-up: wall time from spawn to exit (or to the "hookgate listening" line), median of N runs each:
//   node -e 0                        the floor: a bare node process
//   hookgate --version               the command tree alone
//   hookgate send wake               a client of a running server (config read, one POST, exit)
//   hookgate serve, warm             until listening, on a store that exists (files in the page cache)
//   hookgate serve, first start      until listening, in a fresh directory (the store is created)
// The serve rows also give the CPU time of the process's main thread until the line (Linux: its schedstat), which
// moves far less with the machine's load than the wall time.
// Run on the built CLI (`npm run build` first, or `npm run bench -- --only startup`). Env: STARTUP_RUNS (default 10).
// `--json` prints one JSON object instead of the table.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const root = new URL('..', import.meta.url).pathname;
// STARTUP_CLI: another build's dist/cli/main.js, to compare two builds on the same machine at the same time.
const CLI = process.env.STARTUP_CLI ?? join(root, 'dist/cli/main.js');
const RUNS = Number(process.env.STARTUP_RUNS ?? 10);
const TOKEN = 'startup-bench-token-0123456789abcdefghij';

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function writeConfig(dir) {
  const file = join(dir, 'hookgate.json5');
  const config = {
    gateway: { port: 0 },
    storage: { path: './data/hookgate.db' },
    hooks: { enabled: true, token: TOKEN },
    logging: { level: 'info' },
  };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** Milliseconds from spawn to exit; the command must exit 0. */
function timeRun(args, cwd) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HOOKGATE_TOKEN: '' },
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
  return ms;
}

/** CPU ms of a process's main thread so far (Linux), else undefined. */
function mainThreadCpuMs(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/** Start `serve` and resolve when it logs that it listens: its URL, the time it took, its main thread's CPU, and a stop(). */
function serve(configFile, cwd) {
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configFile], {
    cwd,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, HOOKGATE_TOKEN: '' },
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      if (msg.msg === 'hookgate listening')
        resolve({
          url: msg.url,
          ms: Number(process.hrtime.bigint() - t0) / 1e6,
          cpuMs: mainThreadCpuMs(child.pid),
          stop,
        });
    });
    exited.then((code) => reject(new Error(`serve exited with ${code} before listening`)));
  });
}

async function serveRuns(fresh) {
  const times = [];
  const cpu = [];
  const warmDir = fresh ? undefined : mkdtempSync(join(tmpdir(), 'hookgate-startup-'));
  if (warmDir) {
    // One start to create the store; it is not counted.
    const first = await serve(writeConfig(warmDir), warmDir);
    await first.stop();
  }
  for (let i = 0; i < RUNS; i++) {
    const dir = warmDir ?? mkdtempSync(join(tmpdir(), 'hookgate-startup-'));
    const s = await serve(writeConfig(dir), dir);
    times.push(s.ms);
    if (s.cpuMs !== undefined) cpu.push(s.cpuMs);
    await s.stop();
    if (!warmDir) rmSync(dir, { recursive: true, force: true });
  }
  if (warmDir) rmSync(warmDir, { recursive: true, force: true });
  return { times, cpu };
}

export async function startupBench() {
  const results = {};
  results['node -e 0 (floor)'] = Array.from({ length: RUNS }, () => timeRun(['-e', '0'], root));
  results['hookgate --version'] = Array.from({ length: RUNS }, () => timeRun([CLI, '--version'], root));
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-startup-'));
  const configFile = writeConfig(dir);
  const server = await serve(configFile, dir);
  try {
    results['hookgate send wake'] = Array.from({ length: RUNS }, (_, i) =>
      timeRun(
        [CLI, 'send', 'wake', `startup ${i}`, '--mode', 'next-heartbeat', '--config', configFile, '--url', server.url],
        dir,
      ),
    );
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const cpu = {};
  for (const [key, fresh] of [
    ['hookgate serve, warm (until listening)', false],
    ['hookgate serve, first start (until listening)', true],
  ]) {
    const r = await serveRuns(fresh);
    results[key] = r.times;
    if (r.cpu.length) cpu[key] = r.cpu;
  }
  return Object.fromEntries(
    Object.entries(results).map(([k, v]) => [
      k,
      {
        medianMs: Math.round(median(v)),
        minMs: Math.round(Math.min(...v)),
        runs: v.length,
        ...(cpu[k] ? { mainThreadCpuMedianMs: Math.round(median(cpu[k])) } : {}),
      },
    ]),
  );
}

export function startupTable(results) {
  const rows = Object.entries(results).map(
    ([k, v]) =>
      `  ${k.padEnd(48)} ${String(v.medianMs).padStart(5)} ms  (min ${v.minMs} ms)${v.mainThreadCpuMedianMs === undefined ? '' : `, main thread CPU ${v.mainThreadCpuMedianMs} ms`}`,
  );
  return [`CLI start-up, median of ${RUNS} runs`, ...rows].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await startupBench();
  process.stdout.write(
    `${process.argv.includes('--json') ? JSON.stringify({ startup: results }) : startupTable(results)}\n`,
  );
}
