/**
 * The dashboard's static files (docs/reference.md#dashboard, `GET /` of the admin listener): the hand-written page in
 * the package's `dashboard/` folder, served as is (no build step). The files themselves hold no data and no secret, so
 * they are served without the admin token (`auth: false`); the page asks for the token and sends it on every API call.
 * Only the files named in FILES are served: a request path never reaches the file system.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { AdminCall, AdminRoute } from './route.js';

/**
 * The package's `dashboard/` folder: two levels up from this module, both from `src/admin/` (tsx) and from
 * `dist/admin/` (the built package).
 */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../dashboard/', import.meta.url));

/** The allowlist: URL path → file in DASHBOARD_DIR and its content type. */
const FILES: ReadonlyArray<{ path: string; file: string; type: string }> = [
  { path: '/', file: 'index.html', type: 'text/html; charset=utf-8' },
  { path: '/style.css', file: 'style.css', type: 'text/css; charset=utf-8' },
  { path: '/favicon.svg', file: 'favicon.svg', type: 'image/svg+xml' },
  ...['app.js', 'api.js', 'feed.js', 'dom.js', 'views.js', 'detail.js', 'overview.js', 'breakdown.js'].map((file) => ({
    path: `/${file}`,
    file,
    type: 'text/javascript; charset=utf-8',
  })),
];

/**
 * Scripts and styles only from this origin (no inline script, no eval), API calls only to this origin, no
 * framing. `form-action 'none'`: should the script ever fail to load, submitting the token form cannot put the
 * token in a URL.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "connect-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The dashboard's routes, for src/admin/routes.ts. `dir` is for tests; the package's folder by default. */
export function dashboardRoutes(dir: string = DASHBOARD_DIR): AdminRoute[] {
  return FILES.map(({ path, file, type }) => ({
    method: 'GET' as const,
    path,
    auth: false,
    handle: (call: AdminCall) => serveFile(call, new URL(file, `file://${dir.endsWith('/') ? dir : `${dir}/`}`), type),
  }));
}

async function serveFile({ req, res }: AdminCall, file: URL, type: string): Promise<void> {
  let body: Buffer;
  try {
    body = await readFile(file);
  } catch {
    // A package without its dashboard folder (a broken install): say so instead of a bare 500.
    res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ ok: false, error: 'dashboard file missing from the package', code: 'not_found' }));
    return;
  }
  // Files are read on each request (a few KB) so an upgrade in place is served at once; the ETag spares the bytes.
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  const headers = {
    'content-type': type,
    'content-security-policy': DASHBOARD_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cache-control': 'no-cache',
    etag,
  };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  res.writeHead(200, { ...headers, 'content-length': body.length });
  res.end(body);
}
