#!/usr/bin/env node
// Runs the suite: one build (scripts/test-build.mjs: type-checks src/ and test/ together, writes dist/ and the
// compiled tests under .test-build/), then every test/**/*.test.ts, compiled, through node's test runner.
// `node scripts/test.mjs test/ingress test/ids.test.ts` runs only the files under the given source paths.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { buildForTests } from './test-build.mjs';

const root = new URL('..', import.meta.url).pathname;
const started = Date.now();
const written = buildForTests(root);
if (written === false) process.exit(1);
console.log(`build: ${written} files written in ${((Date.now() - started) / 1000).toFixed(1)} s`);

// Test files are listed from the source tree (a compiled file whose source is gone is not run) and run compiled.
const files = [];
const walk = (p) => {
  if (statSync(p).isDirectory()) for (const e of readdirSync(p).sort()) walk(join(p, e));
  else if (p.endsWith('.test.ts')) files.push(join('.test-build', relative(root, p)).replace(/\.ts$/, '.js'));
};
const targets = process.argv.slice(2);
for (const t of targets.length ? targets : ['test']) {
  if (!existsSync(join(root, t))) {
    console.error(`no such file or folder: ${t}`);
    process.exit(1);
  }
  walk(join(root, t));
}
// The longest files start first (longest-processing-time order): one of them started late used to set the run's end
// alone, the other slots idle. The rest keep their path order (the sort is stable). Not the WAL bound test: 16
// clients keeping a core busy for 30 s, it stays among the last, away from the other heavy files.
const SLOW_FIRST = [
  'e2e/cluster',
  'e2e/postgres-restart',
  'e2e/security-tokens',
  'cli/send-wait',
  'channels/irc',
  'store/postgres',
  'e2e/outbox',
  'cli/scripting',
  'docs/examples',
];
const rank = (f) => {
  const i = SLOW_FIRST.findIndex((s) => f.endsWith(`test/${s}.test.js`));
  return i === -1 ? SLOW_FIRST.length : i;
};
files.sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// Twice the CPUs: most of a test file's time is spent waiting on the servers it starts and on timers (a full run at 4
// files on 2 cores kept them about 85 % busy).
const concurrency = process.env.TEST_CONCURRENCY ?? String(availableParallelism() * 2);
// No single test may hang: 15 min is far past the slowest file (about 90 s on a loaded 2-core machine).
const args = [
  '--enable-source-maps',
  '--test',
  '--test-timeout=900000',
  `--test-concurrency=${concurrency}`,
  '--test-reporter=spec',
  ...files,
];

// Nor may a file whose tests are done but whose process stays alive (a handle a failed test left open: a timer, a
// socket, a sender loop) hold the whole run until CI's time runs out — it did once, 90 min for one failure. The
// runner prints as tests finish; after STALL_MS without a byte of output the run is stopped and fails, saying so.
// (Not --test-force-exit: on Node 20 it cut a file's report short, and the tests it never reported were not counted
// as failures: 2050 tests instead of 2063, "fail 0".)
const STALL_MS = Number(process.env.TEST_STALL_MS ?? 12 * 60_000);
// Its own process group, so a stop takes every test file's process and the servers they started with it.
const child = spawn(process.execPath, args, { cwd: root, stdio: ['inherit', 'pipe', 'pipe'], detached: true });
let last = Date.now();
const relay = (out) => (chunk) => {
  last = Date.now();
  out.write(chunk);
};
child.stdout.on('data', relay(process.stdout));
child.stderr.on('data', relay(process.stderr));
const watchdog = setInterval(() => {
  if (Date.now() - last < STALL_MS) return;
  console.error(
    `\nscripts/test.mjs: no test output for ${Math.round(STALL_MS / 1000)} s: a test file is stuck (its tests ended but its process did not, or a test waits forever); stopping the run`,
  );
  process.kill(-child.pid, 'SIGKILL');
}, 10_000);
// Ctrl-C: the group is not in the terminal's foreground group any more, so pass it on.
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.kill(-child.pid, sig));
child.on('exit', (code, signal) => {
  clearInterval(watchdog);
  process.exit(signal ? 1 : (code ?? 1));
});
