// Top of a V8 .cpuprofile (node --cpu-prof): self time by function and by file. Usage: node bench/profile-top.mjs FILE [N]
import { readFileSync } from 'node:fs';

const [file, n = '25'] = process.argv.slice(2);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((x) => [x.id, x]));
const self = new Map();
const dt = prof.timeDeltas;
for (let i = 0; i < prof.samples.length; i++)
  self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + (dt[i] ?? 0));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fns = new Map();
const files = new Map();
for (const [id, us] of self) {
  const cf = byId.get(id).callFrame;
  const url = cf.url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/');
  const key = `${cf.functionName || '(anonymous)'} ${url}:${cf.lineNumber + 1}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
  const fk = url || `(${cf.functionName})`;
  files.set(fk, (files.get(fk) ?? 0) + us);
}
const top = (m) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(n))
    .map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
console.log(
  `total sampled ${(total / 1e6).toFixed(2)} s\n-- self time by function --\n${top(fns).join('\n')}\n-- self time by file --\n${top(files).join('\n')}`,
);
