import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { TOKEN, writeConfig, runLoad } from './pinned.mjs';
const kind = process.argv[2] ?? 'agent';
const dir = mkdtempSync(join(tmpdir(), 'hgd-'));
const config = writeConfig(dir);
const child = spawn('taskset', ['-c', '0', process.execPath, '--max-semi-space-size=4', '--trace-deopt', '--trace-opt', 'dist/cli/main.js', 'serve', '--config', config], { env: { ...process.env, MALLOC_ARENA_MAX: '1', HOOKGATE_BENCH: '1' }, stdio: ['ignore', 'pipe', 'inherit'] });
let url; let phase = 0; const counts = [{}, {}, {}, {}];
await new Promise((res) => createInterface({ input: child.stdout }).on('line', (l) => {
  if (!url) { try { const m = JSON.parse(l); if (m.url) { url = m.url; res(); } } catch {} }
  let m = /\[bailout \(kind: ([^)]+)\): begin\. deoptimizing 0x\w+ <JSFunction ([^ ]*) .*reason: ([^\]]*)\]/.exec(l);
  if (!m) m = /bailout \(kind: ([^,)]+)[^<]*<JSFunction ([^ >]*)[^]*?reason: ([^)\]]*)/.exec(l);
  if (m) { const k = `deopt ${m[2]} (${m[3]})`; counts[phase][k] = (counts[phase][k] ?? 0) + 1; return; }
  const o = /\[completed (?:optimizing|compiling) 0x\w+ <JSFunction ([^ >]*)/.exec(l);
  if (o) { const k = `opt ${o[1]}`; counts[phase][k] = (counts[phase][k] ?? 0) + 1; }
}));
const o = { wrk: '/usr/bin/wrk', loadCpu: 1 };
for (phase = 0; phase < 4; phase++) {
  const r = await runLoad(o, { url: `${url}/hooks/${kind}`, kind, seconds: 8, connections: 50, token: TOKEN });
  await new Promise((r) => setTimeout(r, phase < 3 ? 8000 : 15000));
  const total = Object.values(counts[phase]).reduce((a, b) => a + b, 0);
  console.log(`phase ${phase}: ${r.requests} requests, ${total} opt/deopt events`);
}
for (const p of [2, 3]) console.log(`phase ${p}:`, Object.entries(counts[p]).sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => `\n  ${v} ${k}`).join(''));
child.kill('SIGTERM');
