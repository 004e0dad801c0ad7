// The last hour broken down (GET /api/v1/breakdown): a bar per minute of requests, accepted and refused by code,
// drawn here as SVG, and the tables an operator asks next: which paths, which codes, which channels, which hooks.
import { api } from './api.js';
import { el, fill, formatTime, svg } from './dom.js';

const $ = (id) => document.getElementById(id);
/** Refusal codes get the palette's colours in order of frequency; past it, the rest share the last one. */
const PALETTE = 6;

/** A code's words for people; the code itself stays visible next to it. */
const CODE_WORDS = {
  unauthorized: 'wrong or missing token or signature',
  rate_limited: 'too many failed logins, or over a limit',
  forbidden: 'address not allowed',
  not_found: 'no such hook',
  query_token: 'token in the URL',
  method_not_allowed: 'not a POST',
  invalid_json: 'body is not JSON',
  invalid_payload: 'invalid body',
  payload_too_large: 'body too large',
  body_timeout: 'body too slow',
  request_timeout: 'request too slow',
  body_aborted: 'sender hung up',
  session_key_not_allowed: 'session key refused',
  agent_not_allowed: 'agent refused',
  invalid_agent: 'no such agent',
  model_not_allowed: 'model refused',
  invalid_channel: 'no such channel',
  idempotency_conflict: 'same key, other body',
  mapping_failed: 'mapping failed',
  unavailable: 'store or service unavailable',
  internal: 'internal error',
};

export async function loadBreakdown() {
  const b = await api('/breakdown');
  const codes = b.byCode.map((c) => c.code);
  const colour = (code) => `c${Math.min(codes.indexOf(code), PALETTE - 1) + 1}`;
  drawChart(b, codes, colour);
  drawLegend(b, codes, colour);
  fillTable('bd-paths', b.byPath.filter((p) => p.refused > 0 || p.accepted > 0).slice(0, 8), (p) => [
    el('td', { class: 'path' }, p.path || '/'),
    el('td', { class: 'n' }, String(p.accepted)),
    el('td', { class: `n${p.refused ? ' bad' : ''}` }, String(p.refused)),
    el(
      'td',
      { class: 'codes' },
      Object.entries(p.codes)
        .sort((x, y) => y[1] - x[1])
        .map(([c, n]) => `${c} ×${n}`)
        .join(', '),
    ),
  ]);
  fillTable('bd-codes', b.byCode, (c) => [
    el(
      'td',
      {},
      el('span', { class: `swatch ${colour(c.code)}`, 'aria-hidden': 'true' }),
      el('code', {}, String(c.status)),
      ' ',
      c.code,
    ),
    el('td', { class: 'hint-cell' }, CODE_WORDS[c.code] ?? ''),
    el('td', { class: 'n bad' }, String(c.count)),
  ]);
  fillTable('bd-channels', b.byChannel, (c) => [
    el('td', {}, el('strong', {}, c.channel)),
    el('td', { class: `n${c.failed ? ' bad' : ''}` }, String(c.failed)),
    el('td', { class: 'n' }, String(c.pendingRetry)),
  ]);
  fillTable('bd-runs', b.runs, (r) => [el('td', {}, r.label), el('td', { class: 'n bad' }, String(r.failed))]);
  return b;
}

function fillTable(id, rows, cells) {
  const table = $(id);
  fill(table.tBodies[0], ...rows.map((r) => el('tr', {}, ...cells(r))));
  table.hidden = rows.length === 0;
  table.nextElementSibling.hidden = rows.length > 0; // the "none" line after each table
}

let last = null; // the last answer, redrawn when the width changes

/** Stacked bars: accepted at the bottom, then each refusal code; the tallest minute fills the height. */
function drawChart(b, codes, colour) {
  last = { b, codes, colour };
  // Drawn at the container's width in CSS pixels, so the axis text is never stretched.
  const w = Math.max(240, Math.round($('bd-chart').clientWidth || 600));
  const h = 140;
  const left = 34;
  const bottom = 18;
  const n = b.buckets.length;
  const slot = (w - left) / n;
  const total = (x) => x.accepted + Object.values(x.refused).reduce((a, v) => a + v, 0);
  const peak = Math.max(1, ...b.buckets.map(total));
  const top = 10; // room for the top axis label
  const y = (v) => ((h - bottom - top) * v) / peak;
  const refusedAll = b.byCode.reduce((a, c) => a + c.count, 0);
  const acceptedAll = b.buckets.reduce((a, x) => a + x.accepted, 0);
  const root = svg('svg', {
    viewBox: `0 0 ${w} ${h}`,
    width: w,
    height: h,
    class: 'chart',
    role: 'img',
    'aria-label': `Requests per minute over the last hour: ${acceptedAll} accepted, ${refusedAll} refused; busiest minute ${peak}`,
  });
  for (const frac of [0, 0.5, 1]) {
    const yy = h - bottom - y(peak * frac);
    root.append(svg('line', { x1: left, x2: w, y1: yy, y2: yy, class: 'grid' }));
    const label = svg('text', { x: left - 4, y: yy + 3, class: 'axis', 'text-anchor': 'end' });
    label.textContent = String(Math.round(peak * frac));
    root.append(label);
  }
  b.buckets.forEach((x, i) => {
    let base = h - bottom;
    const bar = (v, cls) => {
      if (!v) return;
      const hh = Math.max(1, y(v));
      base -= hh;
      root.append(
        svg('rect', { x: left + i * slot + 0.5, y: base, width: Math.max(1, slot - 1), height: hh, class: cls }),
      );
    };
    bar(x.accepted, 'bar-ok');
    for (const code of codes) bar(x.refused[code] ?? 0, `bar-bad ${colour(code)}`);
    const t = svg('title', {});
    const parts = [`${x.accepted} accepted`, ...Object.entries(x.refused).map(([c, v]) => `${v} ${c}`)];
    t.textContent = `${formatTime(x.at)}: ${parts.join(', ')}`;
    const hit = svg('rect', { x: left + i * slot, y: 0, width: slot, height: h - bottom, class: 'hit' });
    hit.append(t);
    root.append(hit);
  });
  for (const [i, anchor] of [
    [0, 'start'],
    [Math.floor(n / 2), 'middle'],
    [n - 1, 'end'],
  ]) {
    const label = svg('text', {
      x: left + (i + (anchor === 'end' ? 1 : anchor === 'middle' ? 0.5 : 0)) * slot,
      y: h - 4,
      class: 'axis',
      'text-anchor': anchor,
    });
    label.textContent = formatTime(b.buckets[i].at).replace(/:\d\d(?=\D*$)/, '');
    root.append(label);
  }
  fill($('bd-chart'), root);
}

let resizeTimer = null;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => last && drawChart(last.b, last.codes, last.colour), 150);
});

function drawLegend(b, codes, colour) {
  const accepted = b.buckets.reduce((a, x) => a + x.accepted, 0);
  fill(
    $('bd-legend'),
    el('li', {}, el('span', { class: 'swatch ok', 'aria-hidden': 'true' }), `accepted ${accepted}`),
    ...b.byCode.map((c) =>
      el('li', {}, el('span', { class: `swatch ${colour(c.code)}`, 'aria-hidden': 'true' }), `${c.code} ${c.count}`),
    ),
  );
  $('bd-empty').hidden = accepted > 0 || codes.length > 0;
}
