/**
 * The dashboard's static files (src/admin/dashboard.ts, dashboard/): served from an allowlist with a strict CSP,
 * and the page's own rules kept by reading its source: no inline script or style attribute, nothing loaded from
 * the internet, no HTML built from strings, the token never in localStorage or a cookie. The page's behaviour is
 * tested in a real browser (test/browser/dashboard.test.ts).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DASHBOARD_CSP, DASHBOARD_DIR, dashboardRoutes } from '../../src/admin/dashboard.js';
import { ROOT } from '../support/paths.js';

const DIR = join(ROOT, 'dashboard');
const FILES = readdirSync(DIR).sort();
const text = (f: string) => readFileSync(join(DIR, f), 'utf8');
const SCRIPTS = FILES.filter((f) => f.endsWith('.js'));
/** A script's code without its comments (which may name what the code must not do). */
const code = (f: string) =>
  text(f)
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:])\/\/.*$/gm, '$1');

describe('dashboard static files', () => {
  let server: Server;
  let base = '';
  before(async () => {
    // The admin router's job in miniature: exact method and path.
    const routes = dashboardRoutes();
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const route = routes.find((r) => r.method === req.method && r.path === url.pathname);
      if (!route) {
        res.writeHead(404).end();
        return;
      }
      void route.handle({ req, res, params: {}, query: url.searchParams });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('resolves the package folder from src/admin (and dist/admin, the same depth)', async () => {
    assert.equal(DASHBOARD_DIR.replace(/\/$/, ''), DIR);
    const built = (await import(join(ROOT, 'dist/admin/dashboard.js')).catch(() => null)) as {
      DASHBOARD_DIR: string;
    } | null;
    if (built) assert.equal(built.DASHBOARD_DIR.replace(/\/$/, ''), DIR);
  });

  it('serves every file of dashboard/ (and only those) without the token, with the security headers', async () => {
    const routes = dashboardRoutes();
    assert.ok(routes.every((r) => r.auth === false && r.method === 'GET'));
    const paths = routes.map((r) => r.path).sort();
    assert.deepEqual(
      paths,
      ['/', ...FILES.filter((f) => f !== 'index.html').map((f) => `/${f}`)].sort(),
      'the allowlist is exactly the folder',
    );
    const types: Record<string, RegExp> = {
      html: /^text\/html; charset=utf-8$/,
      js: /^text\/javascript; charset=utf-8$/,
      css: /^text\/css; charset=utf-8$/,
      svg: /^image\/svg\+xml$/,
    };
    for (const path of paths) {
      const res = await fetch(base + path);
      const file = path === '/' ? 'index.html' : path.slice(1);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', types[file.split('.').pop()!]!, path);
      assert.equal(await res.text(), text(file));
      assert.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
      assert.equal(res.headers.get('cache-control'), 'no-cache');
    }
    assert.match(DASHBOARD_CSP, /(^|; )default-src 'self'(;|$)/);
    assert.match(DASHBOARD_CSP, /(^|; )connect-src 'self'(;|$)/);
    assert.doesNotMatch(DASHBOARD_CSP, /unsafe-inline|unsafe-eval|data:|https?:/);
  });

  it('answers 304 to a matching If-None-Match', async () => {
    const first = await fetch(`${base}/app.js`);
    const etag = first.headers.get('etag');
    assert.ok(etag);
    const again = await fetch(`${base}/app.js`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
  });

  it('a missing file of a broken install is a 404, not a crash', async () => {
    const routes = dashboardRoutes(join(ROOT, 'test/admin/no-such-dir'));
    const s = createServer(
      (req, res) => void routes[0]!.handle({ req, res, params: {}, query: new URLSearchParams() }),
    );
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${(s.address() as AddressInfo).port}/`);
      assert.equal(res.status, 404);
    } finally {
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
  });

  it('everything the page loads is in the folder: scripts, styles, icons and module imports', () => {
    const html = text('index.html');
    const refs = [...html.matchAll(/\b(?:src|href)="([^"#]+)"/g)].map((m) => m[1]!);
    for (const f of SCRIPTS)
      refs.push(...[...text(f).matchAll(/^import\s[^'"]*['"]\.\/([^'"]+)['"]/gm)].map((m) => m[1]!));
    assert.ok(refs.includes('app.js') && refs.includes('style.css'));
    for (const r of refs) assert.ok(FILES.includes(r), `${r} is referenced but not in dashboard/`);
  });

  it('no inline script, inline handler or style attribute (the CSP would block them)', () => {
    const html = text('index.html');
    for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
      assert.match(m[1]!, /\bsrc="/, 'a script element without src');
      assert.equal(m[2]!.trim(), '', 'a script element with inline code');
    }
    assert.doesNotMatch(html, /\son[a-z]+\s*=/i, 'an inline event handler');
    assert.doesNotMatch(html, /\sstyle\s*=/i, 'a style attribute');
    assert.doesNotMatch(html, /<style\b/i, 'a style element');
    for (const f of SCRIPTS)
      assert.doesNotMatch(code(f), /setAttribute\(\s*['"]style['"]|\.style\.|\beval\(|new Function\(/, f);
  });

  it('nothing is fetched from the internet (the only absolute URLs are XML namespaces)', () => {
    for (const f of FILES) {
      const urls = [...text(f).matchAll(/\b(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s'")]*/gi)].map((m) => m[0]);
      assert.deepEqual(
        urls.filter((u) => !/^http:\/\/www\.w3\.org\/2000\/svg$/.test(u)),
        [],
        f,
      );
    }
  });

  it('server data never becomes markup, and the token stays in sessionStorage', () => {
    for (const f of SCRIPTS) {
      const src = code(f);
      assert.doesNotMatch(
        src,
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write/,
        `${f} builds HTML from strings`,
      );
      assert.doesNotMatch(src, /localStorage|document\.cookie/, `${f} keeps something in localStorage or a cookie`);
    }
    assert.match(text('api.js'), /sessionStorage/);
    // The feed sends the token as a header: EventSource cannot, and would need it in the URL.
    assert.doesNotMatch(SCRIPTS.map(code).join('\n'), /EventSource|[?&](?:token|access_token)=/);
  });
});
