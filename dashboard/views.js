// The four live lists: received hooks, runs, failed deliveries, the main session's pending events. Each has a
// load (a page from the API) and an update from a feed event; the feed's events carry ids and states only, so
// anything more is read through the API.
import { api, isDeadDelivery, qs } from './api.js';
import { badge, el, fill, formatTime, sessionLabel, shortId, timeEl } from './dom.js';
import { deliveries, pendingOf } from './overview.js';

const $ = (id) => document.getElementById(id);
const MAX_ROWS = 100;

// ---- received hooks --------------------------------------------------------------------------------------------

const receivedFilter = () => $('received-filter').value;
const accepted = (r) => r.status < 400;

function receivedItem(r) {
  const ok = accepted(r);
  // `unmatched`: a signed request that no mapping takes, answered 200 and ignored.
  const outcome = ok
    ? r.code === 'duplicate'
      ? 'duplicate'
      : r.code === 'unmatched'
        ? 'ignored'
        : 'accepted'
    : 'refused';
  const ids = [
    ...(r.runIds ?? []).map((id) => `run ${shortId(id)}`),
    ...(r.eventIds ?? []).map((id) => `event ${shortId(id)}`),
  ];
  return el(
    'li',
    // The full ids, for finding a request's line (tests, the browser's find); the text shows short ones.
    { class: `recv ${ok ? 'ok' : 'refused'}`, 'data-ids': [...(r.eventIds ?? []), ...(r.runIds ?? [])].join(' ') },
    timeEl(r.at),
    badge(ok ? 'ok' : 'refused', String(r.status)),
    el('span', { class: 'path' }, r.path),
    el('span', { class: 'sr-only' }, ` ${outcome}`),
    r.code ? el('span', { class: 'code' }, r.code) : null,
    r.count > 1 ? el('span', { class: 'code', title: countTitle(r) }, `×${r.count}`) : null,
    r.count === 1 ? el('span', { class: 'sr-only' }, ` (${countTitle(r)})`) : null,
    el('span', { class: 'meta' }, [r.clientIp, ...ids].filter(Boolean).join(' · ')),
  );
}

/** Refusals are stored as counts per window: the time shown is the window's start. */
function countTitle(r) {
  const minutes = Math.round((r.windowMs ?? 60000) / 60000);
  return `counted over ${minutes === 1 ? 'the minute' : `${minutes} minutes`} from ${formatTime(r.at)}`;
}

let receivedCursor = null;
/**
 * The newest 50 received records of the filter, or the next 50 with `more`. A filtered page reads a bounded stretch
 * of the log and may come back short (even empty) with a cursor: the next pages are read until 50 are shown, at most
 * 8 pages per load; what is left is behind the "Load older" button.
 */
export async function loadReceived({ more = false } = {}) {
  const outcome = receivedFilter();
  const items = [];
  let cursor = more ? receivedCursor : undefined;
  for (let pages = 0; pages < 8 && items.length < 50; pages++) {
    const page = await api(`/received${qs({ outcome, limit: 50 - items.length, cursor })}`);
    items.push(...(page?.items ?? []));
    cursor = page?.nextCursor ?? null;
    if (!cursor) break;
  }
  receivedCursor = cursor;
  const list = $('received-list');
  if (more) list.append(...items.map(receivedItem));
  else fill(list, ...items.map(receivedItem));
  $('received-more').hidden = !receivedCursor;
  $('received-empty').hidden = list.children.length > 0;
  $('received-empty').textContent = receivedCursor
    ? 'None among the most recent requests: load older ones to look further.'
    : 'Nothing received yet.';
  return items;
}

export function addReceived(r) {
  const f = receivedFilter();
  if ((f === 'accepted' && !accepted(r)) || (f === 'rejected' && accepted(r))) return;
  const list = $('received-list');
  list.prepend(receivedItem(r));
  while (list.children.length > MAX_ROWS) list.lastElementChild.remove();
  $('received-empty').hidden = true;
}

// ---- runs ------------------------------------------------------------------------------------------------------

const runRows = new Map(); // run id → <tr>
// Run id → when the feed last set its row (performance.now()): a page of runs asked for before that is older than it.
const liveAt = new Map();
let runsCursor = null;
let openRun = () => {};
export function onOpenRun(fn) {
  openRun = fn;
}
const runFilter = () => document.querySelector('input[name="run-state"]:checked')?.value ?? '';
/** What to call a run: the server's label (its name, else its mapping, else its hook); older servers send none. */
const hookOf = (r) => r.label ?? r.hookName ?? r.hookPath ?? '';

function runRow(r) {
  const button = el(
    'button',
    { type: 'button', class: 'link', 'aria-label': `Details of run ${r.id}`, onclick: () => openRun(r.id, button) },
    shortId(r.id),
  );
  const tr = el(
    'tr',
    { 'data-run': r.id, role: 'row' },
    el('td', { class: 'c-time', role: 'cell' }, timeEl(r.createdAt ?? r.at)),
    el('td', { class: 'c-state', role: 'cell' }, badge(r.state, r.state.replace('_', ' '))),
    el(
      'td',
      { class: 'c-hook', role: 'cell', title: r.hookName && r.hookName !== hookOf(r) ? `hook ${r.hookName}` : null },
      hookOf(r),
    ),
    el('td', { class: 'c-session', role: 'cell', title: r.sessionKey ?? '' }, sessionLabel(r.sessionKey)),
    el('td', { class: 'c-id', role: 'cell' }, button),
  );
  if (r.error) tr.title = r.error;
  return tr;
}

export async function loadRuns({ more = false } = {}) {
  const asked = performance.now();
  const page = await api(`/runs${qs({ state: runFilter(), limit: 50, cursor: more ? runsCursor : undefined })}`);
  const body = $('runs-body');
  if (!more) {
    // Rows the feed set while the page was on its way are newer than the page: they stay, on top, as they are (a run
    // that started and finished meanwhile would otherwise vanish, or show the state the page was read in).
    const live = [...body.children].filter((tr) => (liveAt.get(tr.dataset.run) ?? -1) >= asked);
    body.replaceChildren(...live);
    runRows.clear();
    liveAt.clear();
    for (const tr of live) runRows.set(tr.dataset.run, tr);
  }
  for (const r of page?.items ?? []) {
    if (runRows.has(r.id)) continue;
    const tr = runRow(r);
    runRows.set(r.id, tr);
    body.append(tr);
  }
  runsCursor = page?.nextCursor ?? null;
  $('runs-more').hidden = !runsCursor;
  $('runs-empty').hidden = runRows.size > 0;
}

/** A `run` feed event: update its row in place, or add it on top when the filter shows its state. */
export function updateRun(e) {
  const old = runRows.get(e.runId);
  const shown = !runFilter() || runFilter() === e.state;
  if (!shown) {
    old?.remove();
    runRows.delete(e.runId);
    liveAt.delete(e.runId);
    $('runs-empty').hidden = runRows.size > 0;
    return;
  }
  const tr = runRow({
    id: e.runId,
    state: e.state,
    label: e.label,
    hookName: e.hookName,
    sessionKey: e.sessionKey,
    error: e.error,
    createdAt: e.at,
  });
  const body = $('runs-body');
  if (old) {
    // Keep the row's time (the run's creation); the event's `at` is the time of this change.
    tr.firstElementChild.replaceWith(old.firstElementChild);
    old.replaceWith(tr);
  } else {
    body.prepend(tr);
    while (body.children.length > MAX_ROWS * 2) {
      runRows.delete(body.lastElementChild.dataset.run);
      liveAt.delete(body.lastElementChild.dataset.run);
      body.lastElementChild.remove();
    }
  }
  runRows.set(e.runId, tr);
  liveAt.set(e.runId, performance.now());
  $('runs-empty').hidden = true;
}

// ---- failed deliveries -----------------------------------------------------------------------------------------

const deliveryRows = new Map(); // delivery id → { d, li }

/** Fill a delivery's row; the <li> itself is kept across updates so focus on it survives a state change. */
function renderDelivery(li, d) {
  const dead = isDeadDelivery(d.state);
  const retry = dead
    ? el(
        'button',
        {
          type: 'button',
          class: 'primary small',
          'aria-label': `Retry delivery to ${d.channel} ${d.to}`,
          onclick: () => retryDelivery(d.id),
        },
        'Retry',
      )
    : null;
  const run = d.runId
    ? el(
        'button',
        {
          type: 'button',
          class: 'link',
          'aria-label': `Details of run ${d.runId}`,
          onclick: (ev) => openRun(d.runId, ev.currentTarget),
        },
        `run ${shortId(d.runId)}`,
      )
    : 'heartbeat reply';
  fill(
    li,
    el(
      'div',
      { class: 'row-main' },
      el(
        'span',
        { class: 'd-state' },
        badge(d.state),
        d.retried ? el('span', { class: 'sr-only' }, ' (retry queued)') : null,
      ),
      el('strong', {}, d.channel),
      el('span', { class: 'to' }, `→ ${d.to ?? ''}`),
      el('span', { class: 'meta' }, `${d.attempts ?? 0} attempt${d.attempts === 1 ? '' : 's'}`),
      retry,
    ),
    d.lastError ? el('p', { class: 'error-text' }, d.lastError) : null,
    el('p', { class: 'meta' }, run, ' · ', timeEl(d.updatedAt ?? d.createdAt)),
  );
}

function putDelivery(d) {
  const row = deliveryRows.get(d.id);
  const li = row?.li ?? el('li', { class: 'delivery', 'data-delivery': d.id, tabindex: '-1' });
  renderDelivery(li, d);
  if (!row) $('deliveries-list').append(li);
  deliveryRows.set(d.id, { d, li });
  $('deliveries-empty').hidden = deliveryRows.size > 0;
  return li;
}

export async function loadDeliveries() {
  const page = await deliveries('failed', 100);
  const items = page?.items ?? [];
  // Rows retried from this page stay (showing pending, then sent) until the next full load after they settle.
  for (const [id, { d, li }] of deliveryRows) {
    if (!items.some((x) => x.id === id) && !(d.state === 'pending' && d.retried)) {
      li.remove();
      deliveryRows.delete(id);
    }
  }
  for (const d of items) putDelivery(d);
  $('deliveries-empty').hidden = deliveryRows.size > 0;
}

async function retryDelivery(id) {
  const row = deliveryRows.get(id);
  const button = row?.li.querySelector('button.primary');
  if (button) button.disabled = true;
  try {
    await api(`/deliveries/${encodeURIComponent(id)}/retry`, { method: 'POST' });
    // The focused Retry button goes away with the new state: keep focus on the row, not lost to the page.
    // (Unless the feed already told a newer state: the outbox may send it before this answer arrives.)
    const now = deliveryRows.get(id);
    if (now.d === row.d) putDelivery({ ...row.d, state: 'pending', retried: true });
    now.li.focus();
  } catch (err) {
    if (button) button.disabled = false;
    row?.li.append(el('p', { class: 'error', role: 'alert' }, `Retry failed: ${err.message}`));
  }
}

/** A `delivery` feed event: a row we show changes state in place; a new dead letter reloads the list. */
export function updateDelivery(e, reload) {
  const row = deliveryRows.get(e.deliveryId);
  if (row) {
    putDelivery({
      ...row.d,
      state: e.state,
      attempts: e.attempts,
      lastError: e.lastError ?? row.d.lastError,
      updatedAt: e.at,
      retried: row.d.retried && e.state === 'pending',
    });
  } else if (isDeadDelivery(e.state)) reload();
}

// ---- main session's pending events -----------------------------------------------------------------------------

export async function loadPending() {
  const body = await api('/sessions/main').catch((err) => (err.status === 404 ? null : Promise.reject(err)));
  const pending = pendingOf(body);
  fill(
    $('pending-list'),
    ...pending.map((p) =>
      el(
        'li',
        { class: 'pending' },
        el('div', { class: 'row-main' }, timeEl(p.createdAt), badge('origin', p.origin ?? 'event')),
        el('p', { class: 'text' }, p.text ?? ''),
      ),
    ),
  );
  $('pending-empty').hidden = pending.length > 0;
}
