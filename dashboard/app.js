// The dashboard's entry: the token form, then the live page. The page loads each list once, then follows the feed
// (GET /api/v1/events); on every (re)connection of the feed it reloads the lists, so a gap is never shown as calm.
import { api, ApiError, setUnauthorizedHandler, token } from './api.js';
import { loadBreakdown } from './breakdown.js';
import { initDetail, openRun, openRunId, refreshRun } from './detail.js';
import { throttle } from './dom.js';
import { startFeed } from './feed.js';
import { countRequest, drawRate, loadFigures, resetRate } from './overview.js';
import {
  addReceived,
  loadDeliveries,
  loadPending,
  loadReceived,
  loadRuns,
  onOpenRun,
  updateDelivery,
  updateRun,
} from './views.js';

const $ = (id) => document.getElementById(id);
let feed = null;
let rateTimer = null;
let breakdownTimer = null;

// ---- signing in and out ----------------------------------------------------------------------------------------

function showLogin(message = '', moveFocus = false) {
  feed?.stop();
  feed = null;
  clearInterval(rateTimer);
  clearInterval(breakdownTimer);
  if (document.getElementById('run-dialog').open) document.getElementById('run-dialog').close();
  $('dash').hidden = true;
  $('signout').hidden = true;
  $('conn').hidden = true;
  $('login').hidden = false;
  $('token-error').textContent = message;
  $('token').setAttribute('aria-invalid', message ? 'true' : 'false');
  // Focus moves to the field only when the page took it elsewhere (signed out, token refused); on a fresh load the
  // page starts at the top, where Tab leads to the skip link and then the field.
  if (message || moveFocus) $('token').focus();
}

async function signIn(ev) {
  ev.preventDefault();
  const input = $('token');
  const t = input.value.trim();
  const error = $('token-error');
  if (!t) {
    error.textContent = 'Enter the admin token.';
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    return;
  }
  const button = ev.target.querySelector('button[type="submit"]');
  button.disabled = true;
  error.textContent = '';
  try {
    // Checked with one small authenticated read before it is kept.
    await api('/runs?limit=1', { t });
  } catch (err) {
    input.setAttribute('aria-invalid', 'true');
    error.textContent =
      err instanceof ApiError && err.status === 401
        ? 'That token was refused (401). Check admin.token in the config (or data/admin-token) and try again.'
        : err instanceof ApiError
          ? `The admin API answered ${err.status}: ${err.message}`
          : `Could not reach the admin API: ${err.message}`;
    input.select();
    input.focus();
    return;
  } finally {
    button.disabled = false;
  }
  token.set(t);
  input.value = '';
  showDashboard();
  $('overview-h').focus();
}

/** A kept token stopped working (admin.token changed and the server restarted). */
function refused() {
  token.clear();
  showLogin('The token was refused (401); it may have been changed. Sign in again.');
}

function signOut() {
  token.clear();
  showLogin('', true);
}

// ---- the live page ---------------------------------------------------------------------------------------------

/** Report a failed load in the connection line instead of an unhandled rejection. */
const guard = (p) =>
  Promise.resolve(p).catch((err) => {
    if (err instanceof ApiError && err.status === 401) return; // handled: back to the form
    setConn('error', `A list failed to load: ${err.message}`);
  });

// Figures cost several reads without an overview endpoint: at most one refresh per 3 s, however busy the feed.
const reloadFigures = throttle(() => guard(loadFigures()), 3000);
const reloadPending = throttle(() => guard(loadPending()), 500);
const reloadDeliveries = throttle(() => guard(loadDeliveries()), 1000);
const reloadOpenRun = throttle(() => guard(refreshRun()), 300);
// The breakdown reads an hour of records: at most once per 5 s, however busy the feed.
const reloadBreakdown = throttle(() => guard(loadBreakdown()), 5000);

function reloadAll() {
  // The rate's history is seeded from the first page (all outcomes only), not counted again on each reconnection.
  guard(
    loadReceived().then((items) => {
      if ($('received-filter').value) return;
      resetRate();
      for (const r of items) countRequest(r.at, r.count ?? 1);
      drawRate();
    }),
  );
  guard(loadRuns());
  guard(loadDeliveries());
  guard(loadPending());
  guard(loadFigures());
  guard(loadBreakdown());
  if (openRunId()) reloadOpenRun();
}

function onEvent(type, e) {
  if (type === 'received') {
    addReceived(e);
    countRequest(e.at);
    drawRate();
    if (e.eventIds?.length) reloadPending();
  } else if (type === 'run') {
    updateRun(e);
    if (openRunId() === e.runId) reloadOpenRun();
    // A finished run may leave a summary event for the main session.
    if (e.state !== 'queued' && e.state !== 'running') reloadPending();
  } else if (type === 'delivery') {
    updateDelivery(e, reloadDeliveries);
    if (e.runId && openRunId() === e.runId) reloadOpenRun();
  } else if (type === 'heartbeat') {
    reloadPending();
  }
  // `reset` (the server could not resume from our Last-Event-ID) needs nothing more: it comes right after a
  // (re)connection, on which the lists were reloaded anyway.

  reloadFigures();
  if (type === 'received' || type === 'delivery' || (type === 'run' && e.state !== 'queued' && e.state !== 'running'))
    reloadBreakdown();
}

function setConn(state, detail = '') {
  const words = {
    connecting: 'Connecting…',
    live: 'Live',
    retrying: 'Reconnecting…',
    refused: 'Token refused',
    error: 'Error',
  };
  const conn = $('conn');
  conn.hidden = false;
  conn.dataset.state = state;
  conn.textContent = words[state] ?? state;
  conn.title = detail;
}

function showDashboard() {
  $('login').hidden = true;
  $('dash').hidden = false;
  $('signout').hidden = false;
  feed?.stop();
  feed = startFeed({
    token: () => token.get(),
    onEvent,
    onOpen: reloadAll,
    onStatus: (state, detail) => {
      if (state === 'refused') refused();
      else setConn(state, detail);
    },
  });
  drawRate();
  clearInterval(rateTimer);
  rateTimer = setInterval(drawRate, 1000);
  // The chart's minutes move on even when nothing happens.
  clearInterval(breakdownTimer);
  breakdownTimer = setInterval(reloadBreakdown, 60000);
}

// ---- wiring ----------------------------------------------------------------------------------------------------

initDetail();
onOpenRun(openRun);
setUnauthorizedHandler(refused);
$('login-form').addEventListener('submit', signIn);
$('signout').addEventListener('click', signOut);
$('received-filter').addEventListener('change', () => guard(loadReceived()));
$('received-more').addEventListener('click', () => guard(loadReceived({ more: true })));
for (const r of document.querySelectorAll('input[name="run-state"]'))
  r.addEventListener('change', () => guard(loadRuns()));
$('runs-more').addEventListener('click', () => guard(loadRuns({ more: true })));

if (token.get()) showDashboard();
else showLogin();
