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
run(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files]);
