#!/usr/bin/env node
// Bytes allocated per request, by the function that allocated them: V8's sampling heap profiler in the server
// (bench/allocation-sampler.mjs), counting what the collectors freed as well. Garbage is what the young-generation
// collector's share of a request grows with; this names where it comes from.
//   node bench/allocations.mjs [--target T] [ROOT]   ROOT: a checkout with a built dist/ (default: this one)
//   T: wake (default), agent (/hooks/agent, echo model, its runs executing meanwhile), contract
//   (bench/contract-floor-server.mjs, /hooks/wake)
//   env: ALLOC_WARMUP (5000 requests, not counted), ALLOC_REQUESTS (20000, counted), ALLOC_CONNECTIONS (50),
//   ALLOC_TOP (40 functions), ALLOC_NODE_ARGS (more node flags for the server: `--no-turbo-inlining` charges an
//   inlined function's allocations to itself rather than to its caller), ALLOC_INTERVAL (sampling interval, 256 bytes)
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { closedLoop, printedUrl } from './closed-loop.mjs';
import { startCommand, TOKEN, writeConfig } from './pinned.mjs';

const here = new URL('..', import.meta.url).pathname;
const argv = process.argv.slice(2);
const targetAt = argv.indexOf('--target');
const TARGET = targetAt === -1 ? 'wake' : argv.splice(targetAt, 2)[1];
if (!['wake', 'agent', 'contract'].includes(TARGET))
  throw new Error(`--target: wake, agent or contract, not ${TARGET}`);
const root = resolve(argv[0] ?? here);
const WARMUP = Number(process.env.ALLOC_WARMUP ?? 5000);
const REQUESTS = Number(process.env.ALLOC_REQUESTS ?? 20000);
const CONNECTIONS = Number(process.env.ALLOC_CONNECTIONS ?? 50);
const TOP = Number(process.env.ALLOC_TOP ?? 40);

const dir = mkdtempSync(join(tmpdir(), 'hookgate-alloc-'));
const profile = join(dir, 'heap.json');
const config = writeConfig(dir);
const server =
  TARGET === 'contract'
    ? [join(root, 'bench/contract-floor-server.mjs'), join(dir, 'floor.db'), join(dir, 'deliveries.jsonl'), TOKEN]
    : [...startCommand().flags, join(root, 'dist/cli/main.js'), 'serve', '--config', config];
const nodeArgs = (process.env.ALLOC_NODE_ARGS ?? '').split(' ').filter(Boolean);
const child = spawn(
  process.execPath,
  [...nodeArgs, '--import', join(here, 'bench/allocation-sampler.mjs'), ...server],
  { env: { ...process.env, HOOKGATE_BENCH: '1', ALLOC_PROFILE: profile }, stdio: ['ignore', 'pipe', 'inherit'] },
);
const url = await printedUrl(child);

const path = TARGET === 'agent' ? '/hooks/agent' : '/hooks/wake';
const load = closedLoop({ url, path, token: TOKEN, connections: CONNECTIONS });
const until = async (file) => {
  while (!existsSync(file)) await new Promise((r) => setTimeout(r, 20));
};

await load.burst(WARMUP);
child.kill('SIGUSR2');
await until(`${profile}.started`);
await load.burst(REQUESTS);
child.kill('SIGUSR2');
await until(profile);
await new Promise((r) => setTimeout(r, 200)); // the file is written whole before the next line runs, but be sure
child.kill('SIGTERM');
load.close();
const { head, samples } = JSON.parse(readFileSync(profile, 'utf8'));
rmSync(dir, { recursive: true, force: true });

// Each sample's node is a call stack; its self bytes go to the top frame, and to the frame with its caller.
const stacks = new Map();
const walk = (node, parents) => {
  const f = node.callFrame;
  const name = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(dist|bench|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
  const stack = [name, ...parents];
  stacks.set(node.id, stack);
  for (const c of node.children ?? []) walk(c, stack);
};
walk(head, []);
const self = new Map();
const withCaller = new Map();
let total = 0;
for (const s of samples) {
  const [top, caller] = stacks.get(s.nodeId);
  total += s.size;
  self.set(top, (self.get(top) ?? 0) + s.size);
  const pair = `${top}  <  ${caller ?? '(root)'}`;
  withCaller.set(pair, (withCaller.get(pair) ?? 0) + s.size);
}
const show = (m) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([k, v]) => `${(v / REQUESTS).toFixed(0).padStart(7)}  ${k}`)
    .join('\n');
console.log(
  `bytes allocated per ${path} request (${TARGET}, ${root}; ${WARMUP} warm-up, ${REQUESTS} counted, ${CONNECTIONS} connections): ${(total / REQUESTS).toFixed(0)}`,
);
console.log(`\nby function (self):\n${show(self)}`);
console.log(`\nby function and its caller:\n${show(withCaller)}`);
