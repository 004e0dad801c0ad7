#!/usr/bin/env node
// Runs the whole suite: build (the e2e tests start the built server), typecheck the tests,
// then every test/**/*.test.ts through node's test runner with the tsx loader.
// `node scripts/test.mjs test/ingress` runs only the files under the given paths.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const run = (cmd, args) => {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root });
  if (r.status !== 0) process.exit(r.status ?? 1);
};

const tsc = join(root, 'node_modules/typescript/bin/tsc');
run(process.execPath, [tsc, '-p', 'tsconfig.json']);
run(process.execPath, [tsc, '-p', 'tsconfig.test.json']);

const files = [];
const walk = (p) => {
  if (statSync(p).isDirectory()) for (const e of readdirSync(p).sort()) walk(join(p, e));
  else if (p.endsWith('.test.ts')) files.push(relative(root, p));
};
const targets = process.argv.slice(2);
for (const t of targets.length ? targets : ['test']) walk(join(root, t));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const concurrency = process.env.TEST_CONCURRENCY ?? '2';
// A file ends when its tests have: a handle left open by a failed test (a timer, a socket, a sender loop) must not
// keep its process — and so the whole run — alive until CI's time runs out (it did once: 90 min for one failure).
// And no single test may hang: 15 min is far past the slowest (the store contract suite on PostgreSQL, ~4 min).
// (--test-force-exit is Node 20.14+; package.json allows 20.11.)
const guards = ['--test-timeout=900000'];
const [major, minor] = process.versions.node.split('.').map(Number);
if (major > 20 || (major === 20 && minor >= 14)) guards.push('--test-force-exit');
run(process.execPath, ['--import', 'tsx', '--test', ...guards, `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files]);
