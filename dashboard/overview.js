// The headline figures: requests/s (counted here from the feed's `received` events, with a one-minute sparkline)
// and the queue depths and failures of the last hour (GET /api/v1/overview).
import { api, qs } from './api.js';
import { fill, svg } from './dom.js';

const WINDOW_S = 60;
const RATE_OVER_S = 10;
const buckets = new Map(); // whole second → requests

export function resetRate() {
  buckets.clear();
}

/** One request seen at `at` (epoch ms). */
export function countRequest(at = Date.now(), n = 1) {
  const s = Math.floor(at / 1000);
  if (s <= Math.floor(Date.now() / 1000) - WINDOW_S) return;
  buckets.set(s, (buckets.get(s) ?? 0) + n);
}

function series() {
  const now = Math.floor(Date.now() / 1000);
  for (const s of buckets.keys()) if (s <= now - WINDOW_S) buckets.delete(s);
  const out = [];
  for (let s = now - WINDOW_S + 1; s <= now; s++) out.push(buckets.get(s) ?? 0);
  return out;
}

/** Redraw the rate and its sparkline (every second, and on each request). */
export function drawRate() {
  const values = series();
  // The last RATE_OVER_S whole seconds, not the current partial one.
  const recent = values.slice(-RATE_OVER_S - 1, -1);
  const rate = recent.reduce((a, b) => a + b, 0) / RATE_OVER_S;
  document.getElementById('f-rps').textContent = rate >= 10 ? rate.toFixed(0) : rate.toFixed(1);

  const w = 120;
  const h = 28;
  const peak = Math.max(1, ...values);
  const step = w / (values.length - 1);
  const points = values
    .map((v, i) => `${(i * step).toFixed(1)},${(h - 2 - (v / peak) * (h - 4)).toFixed(1)}`)
    .join(' ');
  const root = svg('svg', {
    viewBox: `0 0 ${w} ${h}`,
    width: w,
    height: h,
    role: 'img',
    'aria-label': `Requests per second over the last minute; peak ${Math.max(...values)}`,
  });
  root.append(
    svg('polyline', { points: `0,${h} ${points} ${w},${h}`, class: 'spark-fill' }),
    svg('polyline', { points, class: 'spark-line' }),
  );
  fill(document.getElementById('spark-wrap'), root);
}

/** Queue depths and failures in the last hour: GET /api/v1/overview (docs/admin.md). */
export async function loadFigures() {
  const { queues, failures } = await api('/overview');
  const set = (id, v) => (document.getElementById(id).textContent = v ?? '–');
  set('f-queued', queues.runs.queued);
  set('f-running', queues.runs.running);
  set('f-outbox', queues.outboxPending);
  set('f-events', queues.systemEventsPending);
  set('f-failures', failures.runsFailed + failures.deliveriesDead + failures.refused);
  const parts = [
    [failures.refused, 'refused', 'refused'],
    [failures.runsFailed, 'run failed', 'runs failed'],
    [failures.deliveriesDead, 'delivery failed', 'deliveries failed'],
  ];
  set(
    'f-failures-parts',
    parts
      .filter(([n]) => n > 0)
      .map(([n, one, many]) => `${n} ${n === 1 ? one : many}`)
      .join(' · '),
  );
}

/** A page of deliveries in one of the API's states (`pending`, `sent`, `failed`). */
export function deliveries(state, limit = 100) {
  return api(`/deliveries${qs({ state, limit })}`);
}

/** A session's pending system events (GET /api/v1/sessions/:key answers them as `pending`). */
export function pendingOf(body) {
  return Array.isArray(body?.pending) ? body.pending : [];
}
