// Plots a retention soak (`npm run bench -- --only retention`, its text output) as an SVG: the store's size (database
// + WAL + shared memory) and the WAL's over time (sampled, and its high-water mark read from the -shm file), with the
// ten-minute prunes marked. No dependencies.
// Usage: node bench/plot-soak.mjs SOAK.txt OUT.svg
import { readFileSync, writeFileSync } from 'node:fs';

const PRUNE_EVERY_S = 600;

/** The soak table's columns this plot reads, found by their header (the table may gain or reorder columns). */
const COLUMNS = [/^t s$/, /^store MiB$/, /^WAL MiB$/, /^WAL high-water MiB/];

/**
 * The table rows of the soak's text output: [t s, store MiB, WAL MiB, WAL high-water MiB] (the last NaN in an
 * output from before the soak read the high-water mark). A table without its header is read in the order the soak
 * first wrote it (time, store, WAL).
 */
export function soakSamples(text) {
  const cellsOf = (line) =>
    line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
  let at = [0, 1, 2, -1];
  const rows = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('| t s |')) {
      const names = cellsOf(line);
      at = COLUMNS.map((re) => names.findIndex((n) => re.test(n)));
    }
    if (!/^\| \d+ \| [\d.]+ \| [\d.]+ \|/.test(line)) continue;
    const cells = cellsOf(line).map(Number);
    rows.push(at.map((i) => (i >= 0 && i < cells.length ? cells[i] : Number.NaN)));
  }
  return rows;
}

/**
 * One panel: column `i` of `rows` against time, in the box [top, top + h), its own y range; `also`: a second column
 * drawn dashed on the same axis (where it has values).
 */
function panel(rows, i, { top, h, W, pad, tMax, label, color, fromZero, also }) {
  const vs = rows.flatMap((r) => (also && Number.isFinite(r[also.i]) ? [r[i], r[also.i]] : [r[i]]));
  const lo = fromZero ? 0 : Math.floor(Math.min(...vs) / 50) * 50;
  const hi = Math.max(lo + 10, Math.ceil(Math.max(...vs) / 10) * 10);
  const x = (t) => pad.l + (t / tMax) * (W - pad.l - pad.r);
  const y = (v) => top + h - ((v - lo) / (hi - lo)) * h;
  const out = [];
  for (let k = 0; k <= 4; k++) {
    const v = lo + ((hi - lo) * k) / 4;
    out.push(
      `<line x1="${pad.l}" x2="${W - pad.r}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#ddd"/>`,
      `<text x="${pad.l - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${Math.round(v)}</text>`,
    );
  }
  for (let t = 0; t <= tMax; t += PRUNE_EVERY_S)
    out.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${top}" y2="${top + h}" stroke="#f0c080" stroke-dasharray="4 3"/>`);
  const d = rows.map((r, k) => `${k ? 'L' : 'M'}${x(r[0]).toFixed(1)},${y(r[i]).toFixed(1)}`).join('');
  out.push(
    `<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`,
    `<text x="${pad.l + 8}" y="${top + 14}" fill="${color}">${label}</text>`,
  );
  const more = also ? rows.filter((r) => Number.isFinite(r[also.i])) : [];
  if (more.length) {
    const d2 = more.map((r, k) => `${k ? 'L' : 'M'}${x(r[0]).toFixed(1)},${y(r[also.i]).toFixed(1)}`).join('');
    out.push(
      `<path d="${d2}" fill="none" stroke="${color}" stroke-width="1.5" stroke-dasharray="6 3"/>`,
      `<text x="${W - pad.r - 8}" y="${top + 14}" text-anchor="end" fill="${color}">${also.label}</text>`,
    );
  }
  return out;
}

export function plotSoak(rows, title) {
  const W = 720;
  const pad = { l: 60, r: 20 };
  const tMax = Math.max(...rows.map((r) => r[0]));
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="420" font-family="sans-serif" font-size="12">`,
    '<rect width="100%" height="100%" fill="white"/>',
    `<text x="${pad.l}" y="18" font-size="14">${title}</text>`,
    ...panel(rows, 1, { top: 30, h: 210, W, pad, tMax, label: 'store MiB (database + WAL)', color: '#1f5fbf' }),
    ...panel(rows, 2, {
      top: 270,
      h: 100,
      W,
      pad,
      tMax,
      label: 'WAL MiB, sampled',
      color: '#bf3f1f',
      fromZero: true,
      also: { i: 3, label: 'dashed: its high-water mark so far (≤)' },
    }),
  ];
  const x = (t) => pad.l + (t / tMax) * (W - pad.l - pad.r);
  for (let t = 0; t <= tMax; t += PRUNE_EVERY_S)
    out.push(`<text x="${x(t)}" y="388" text-anchor="middle">${t / 60}</text>`);
  out.push('<text x="390" y="410" text-anchor="middle">minutes (dashed: a prune, every 10)</text>', '</svg>');
  return `${out.join('\n')}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error('usage: node bench/plot-soak.mjs SOAK.txt OUT.svg');
    process.exit(1);
  }
  const text = readFileSync(input, 'utf8');
  const head = text.split('\n').find((l) => l.startsWith('hookgate retention soak')) ?? 'retention soak';
  const rate = /\/hooks\/wake (\d+)\/s \+ \/hooks\/agent (\d+)\/s for (\d+) s/.exec(head);
  const title = rate
    ? `${Number(rate[1]) + Number(rate[2])} requests/s for ${Number(rate[3]) / 60} min, default retention`
    : 'retention soak';
  writeFileSync(output, plotSoak(soakSamples(text), title));
}
