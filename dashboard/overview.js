// The headline figures: requests/s (counted here from the feed's `received` events, with a one-minute sparkline)
// and the queue depths and failures of the last hour (from GET /api/v1/overview when the server has it; otherwise
// estimated from the lists, and the page says so).
import { api, ApiError, qs, token } from './api.js';
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
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(h - 2 - (v / peak) * (h - 4)).toFixed(1)}`).join(' ');
  const root = svg('svg', { viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: 'img', 'aria-label': `Requests per second over the last minute; peak ${Math.max(...values)}` });
  root.append(svg('polyline', { points: `0,${h} ${points} ${w},${h}`, class: 'spark-fill' }), svg('polyline', { points, class: 'spark-line' }));
  fill(document.getElementById('spark-wrap'), root);
}

let overviewMissing = false;

/** Queue depths and failures: the overview endpoint, else counts from the lists (first pages only). */
export async function loadFigures() {
  let f = null;
  if (!overviewMissing) {
    try {
      f = normalise(await api('/overview'));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) throw err;
      overviewMissing = true;
    }
  }
  const note = document.getElementById('overview-note');
  if (!f) {
    // Without the overview endpoint: the queue gauges of /metrics (the store's own counts), failures from the lists.
    const gauges = await fromMetrics();
    f = { ...(await estimate({ depths: !gauges })), ...(gauges ?? {}) };
    note.hidden = false;
    note.textContent = gauges
      ? 'Failures in the last hour are counted from the first page of each list (this server has no /api/v1/overview).'
      : 'Figures are counted from the first page of each list (this server has no /api/v1/overview); “200+” means at least.';
  } else note.hidden = true;
  const set = (id, v) => (document.getElementById(id).textContent = v ?? '–');
  set('f-queued', f.queued);
  set('f-running', f.running);
  set('f-outbox', f.outboxPending);
  set('f-events', f.systemEventsPending);
  set('f-failures', f.failures);
}

/**
 * Accepts `{ queues|depths|queueDepths: QueueDepths, failures|recentFailures: RecentFailures }` or both flat at the
 * top (src/store/pages.ts).
 */
function normalise(body) {
  const q = body?.queues ?? body?.depths ?? body?.queueDepths ?? body ?? {};
  const fl = body?.failures ?? body?.recentFailures ?? body?.failuresLastHour ?? body ?? {};
  const failures = typeof fl === 'number' ? fl : (fl.runsFailed ?? 0) + (fl.deliveriesDead ?? 0) + (fl.refused ?? 0);
  return {
    queued: q.runs?.queued ?? 0,
    running: q.runs?.running ?? 0,
    outboxPending: q.outboxPending ?? 0,
    systemEventsPending: q.systemEventsPending ?? 0,
    failures,
  };
}

let metricsMissing = false;

/** The queue gauges of GET /metrics (Prometheus text), summed over any extra labels (a cluster's node). */
async function fromMetrics() {
  if (metricsMissing) return null;
  const res = await fetch('/metrics', { headers: { authorization: `Bearer ${token.get() ?? ''}` }, cache: 'no-store' });
  if (!res.ok) {
    if (res.status === 404) metricsMissing = true;
    return null;
  }
  const sums = new Map();
  for (const line of (await res.text()).split('\n')) {
    const m = /^(hookgate_runs|hookgate_outbox_pending|hookgate_system_events_pending)(?:\{([^}]*)\})?\s+([0-9.eE+-]+)$/.exec(line);
    if (!m) continue;
    const state = /(?:^|,)state="([^"]*)"/.exec(m[2] ?? '')?.[1];
    const key = state ? `${m[1]}:${state}` : m[1];
    sums.set(key, (sums.get(key) ?? 0) + Number(m[3]));
  }
  if (!sums.has('hookgate_outbox_pending')) return null;
  return {
    queued: sums.get('hookgate_runs:queued') ?? 0,
    running: sums.get('hookgate_runs:running') ?? 0,
    outboxPending: sums.get('hookgate_outbox_pending'),
    systemEventsPending: sums.get('hookgate_system_events_pending') ?? 0,
  };
}

/** Failures in the last hour (and, with `depths`, the queue depths) from the first page of each list. */
async function estimate({ depths }) {
  const LIMIT = 200;
  const count = (page) => (page?.nextCursor ? `${LIMIT}+` : (page?.items?.length ?? 0));
  const hourAgo = Date.now() - 3600_000;
  const none = Promise.resolve(null);
  const [failedRuns, dead, refused, queued, running, pending, main] = await Promise.all([
    api(`/runs${qs({ state: 'failed', limit: LIMIT })}`),
    deliveries('failed', LIMIT),
    api(`/received${qs({ outcome: 'rejected', limit: LIMIT })}`),
    depths ? api(`/runs${qs({ state: 'queued', limit: LIMIT })}`) : none,
    depths ? api(`/runs${qs({ state: 'running', limit: LIMIT })}`) : none,
    depths ? deliveries('pending', LIMIT) : none,
    depths ? api('/sessions/main').catch(() => null) : none,
  ]);
  const recent = (items, key) => (items ?? []).filter((x) => (x[key] ?? x.updatedAt ?? x.createdAt ?? 0) >= hourAgo);
  const failures =
    recent(failedRuns?.items, 'finishedAt').length +
    recent(dead?.items, 'updatedAt').length +
    recent(refused?.items, 'at').reduce((n, r) => n + (r.count ?? 1), 0);
  if (!depths) return { failures };
  return {
    queued: count(queued),
    running: count(running),
    outboxPending: count(pending),
    systemEventsPending: pendingOf(main).length,
    failures,
  };
}

// The contract's delivery states are pending|sent|failed; a server on the store's words (delivered|dead) refuses
// `failed` with a 400, and the page then asks with `dead` from there on.
let deadWord = 'failed';
export async function deliveries(state, limit = 100) {
  const word = state === 'failed' ? deadWord : state;
  try {
    return await api(`/deliveries${qs({ state: word, limit })}`);
  } catch (err) {
    if (state === 'failed' && deadWord === 'failed' && err instanceof ApiError && err.status === 400) {
      deadWord = 'dead';
      return api(`/deliveries${qs({ state: 'dead', limit })}`);
    }
    throw err;
  }
}

/** A session's pending system events, whatever the answer's nesting (`{ session: {...} }` or flat). */
export function pendingOf(body) {
  const s = body?.session ?? body ?? {};
  const p = s.pending ?? s.pendingEvents ?? body?.pending;
  return Array.isArray(p) ? p : [];
}
