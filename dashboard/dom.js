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

/** 14:05:09 for today, 2026-11-24 14:05 otherwise; the full ISO time in the title. */
export function timeEl(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return el('span', {}, '—');
  const d = new Date(ms);
  const today = new Date().toDateString() === d.toDateString();
  const pad = (n) => String(n).padStart(2, '0');
  const hms = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  const text = today ? hms : `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${hms.slice(0, 5)}`;
  return el('time', { datetime: d.toISOString(), title: d.toISOString() }, text);
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
