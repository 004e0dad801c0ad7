// The admin API client. The token lives in sessionStorage only (gone when the tab closes; never in a URL, a cookie
// or localStorage) and travels in the Authorization header of each call.

const KEY = 'hookgate.adminToken';

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An API answer other than 2xx: the status and the server's `{ error, code }` when it sent one. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error || `HTTP ${status}`);
    this.status = status;
    this.code = body?.code ?? null;
  }
}

/** Called on any 401 after sign-in (the token was rotated): app.js signs out with a message. */
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

/** GET or POST a JSON endpoint under /api/v1; `t` overrides the stored token (checking one before keeping it). */
export async function api(path, { method = 'GET', body, t } = {}) {
  const headers = { authorization: `Bearer ${t ?? token.get() ?? ''}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  if (!res.ok) {
    if (res.status === 401 && t === undefined) onUnauthorized();
    throw new ApiError(res.status, json);
  }
  return json;
}

/** `?a=1&b=x` from an object, leaving out empty values. */
export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

// A delivery's state is pending, sent or failed (dead-lettered), in the API and the live feed alike.
export const isDeadDelivery = (state) => state === 'failed';
