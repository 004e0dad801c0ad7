// Small DOM helpers. Every string from the server goes in through textContent (el's children), never innerHTML,
// so a hook path or a model reply cannot inject markup.

/** el('li', { class: 'x', 'aria-label': 'y' }, 'text', childNode, null) */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replace all children of node. */
export function fill(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

const SVG = 'http://www.w3.org/2000/svg';
export function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

const startOfDay = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const dayAndClock = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
});
const fullDate = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
});
const longForm = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' });

/** A time in the browser's locale: the clock for today, the date and minute before (the year too if not this one). */
export function formatTime(ms, now = Date.now()) {
  const d = new Date(ms);
  if (startOfDay(d) === startOfDay(new Date(now))) return clock.format(d);
  return (d.getFullYear() === new Date(now).getFullYear() ? dayAndClock : fullDate).format(d);
}

/** A <time>: formatTime's text; the ISO time in `datetime` and, with the long local form, in the title. */
export function timeEl(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return el('span', {}, '—');
  const d = new Date(ms);
  return el('time', { datetime: d.toISOString(), title: `${d.toISOString()} (${longForm.format(d)})` }, formatTime(ms));
}

/**
 * A session key as a person reads it: `main`; a run's own session (`hook:<id>`, made when the request named none)
 * as "own session" and the end of its id; a named key without the `hook:` prefix every hook session has.
 */
export function sessionLabel(key) {
  const k = String(key ?? '');
  const own = /^hook:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(k);
  if (own) return `own session …${k.slice(-6)}`;
  return k.startsWith('hook:') ? k.slice(5) : k;
}

/**
 * A short id for lists: the end of it. Ids are time-ordered (ULID-like), so ids made close together share their
 * start and differ at the end. The full id is in the row's button label and the detail view.
 */
export function shortId(id) {
  const s = String(id ?? '');
  return s.length > 12 ? `…${s.slice(-8)}` : s;
}

/** A coloured state label; the word is always there, colour is only a second cue. */
export function badge(state, label = state) {
  return el('span', { class: `badge state-${String(state).replace(/[^a-z_]/gi, '')}` }, label);
}

/** Run fn at most once per `ms`, trailing (refreshes triggered by bursts of feed events). */
export function throttle(fn, ms) {
  let timer = null;
  let again = false;
  return function run() {
    if (timer) {
      again = true;
      return;
    }
    fn();
    timer = setTimeout(() => {
      timer = null;
      if (again) {
        again = false;
        run();
      }
    }, ms);
  };
}
