/**
 * The dashboard (docs/reference.md#dashboard) in a real headless Chromium against the real server process with its
 * admin listener: sign in with the token (and a clear message for a wrong one), a wake sent with curl shows up
 * within a second, an agent run's detail shows its reply, a dead-lettered delivery is retried with a click and
 * turns `sent`; keyboard-only sign-in, and nothing wider than a 375 px phone. Run `npm run build` first when running
 * this file alone. Skips without /usr/bin/chromium (fails instead under HOOKGATE_REQUIRE_SERVICES=1).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { launchChromium, skipWithoutChromium, type TestBrowser } from '../support/browser.js';
import { postAgent, startServer, waitFor, webhookSecret } from '../support/runtime-kit.js';
import { type Hookgate, TOKEN } from '../support/server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// The functions given to page.evaluate run in the page; the tests are compiled without the DOM's types.
declare const document: any, window: any, sessionStorage: any, localStorage: any, location: any, getComputedStyle: any;

const ADMIN_TOKEN = 'test-admin-token-fedcba9876543210';
const uniq = (label: string) => `${label} ${Math.random().toString(36).slice(2, 8)}`;

/** A port free right now, for the admin listener (the config names a port; 0 would leave the test to guess it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const skip = skipWithoutChromium();

/**
 * Run in the page (a string: the test compiler's helpers do not exist there): the texts whose contrast with the
 * first opaque background behind them is under 4.5:1 (WCAG AA for normal text), the chart's axis labels included.
 */
const CONTRAST_CHECK = `(() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const bgOf = (e) => {
    for (let n = e; n; n = n.parentElement) {
      const c = getComputedStyle(n).backgroundColor;
      if (c && !c.endsWith(', 0)') && c !== 'transparent') return c;
    }
    return 'rgb(255, 255, 255)';
  };
  const ratio = (fg, bg) => {
    const [a, b] = [lum(rgb(fg)), lum(rgb(bg))];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  };
  const out = [];
  const sel = '.figure dt, .figure .parts, .legend li, .mini td, .mini th, .runs td, .recv time, .recv .code, .meta';
  for (const e of [...document.querySelectorAll(sel)].slice(0, 300)) {
    if (!e.textContent.trim() || !e.getClientRects().length) continue;
    const r = ratio(getComputedStyle(e).color, bgOf(e));
    if (r < 4.5) out.push(e.tagName + '.' + e.className + ' ' + r.toFixed(2));
  }
  const axis = document.querySelector('svg.chart text.axis');
  if (axis && ratio(getComputedStyle(axis).fill, bgOf(axis)) < 4.5) out.push('chart axis');
  return out;
})()`;

describe('dashboard in Chromium', { skip, timeout: 120_000 }, () => {
  const secret = webhookSecret();
  let receiver: WebhookReceiver;
  let hg: Hookgate;
  let browser: TestBrowser;
  let admin = '';

  before(async () => {
    receiver = await startWebhookReceiver(secret);
    const port = await freePort();
    hg = await startServer({
      heartbeat: { every: 'off' },
      agents: { defaults: { model: 'echo/echo' } },
      // A run of a named session (as a mapping would make one) shows that session's label.
      hooks: { allowRequestSessionKey: true, refusals: { windowSeconds: 1 } },
      admin: { enabled: true, bind: '127.0.0.1', port, token: ADMIN_TOKEN },
      channels: {
        // Two quick attempts, then a dead letter: the stand-in receiver refuses as scripted.
        outbox: { initialBackoffMs: 50, maxBackoffMs: 200, maxAttempts: 2 },
        webhook: { targets: { ops: { url: receiver.url, secret } } },
      },
    });
    admin = `http://127.0.0.1:${port}`;
    await waitFor('the admin listener', async () => (await fetch(`${admin}/healthz`).catch(() => null))?.ok, 10_000);
    browser = await launchChromium();
  });
  after(async () => {
    for (const c of [() => browser?.close(), () => hg?.cleanup(), () => receiver?.close()]) {
      try {
        await c();
      } catch {
        /* keep cleaning up */
      }
    }
  });

  /** A new tab with what the page logs and throws collected (a page error fails the test that made the tab). */
  async function newPage(width = 1280): Promise<Page & { problems: string[] }> {
    const page = (await browser.context.newPage()) as Page & { problems: string[] };
    page.problems = [];
    page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${admin}/`);
    return page;
  }

  async function signIn(page: Page, token = ADMIN_TOKEN): Promise<void> {
    await page.getByLabel('Admin token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  /** Signed in and following the feed (its status line says Live). */
  async function liveDashboard(width = 1280) {
    const page = await newPage(width);
    await signIn(page);
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    return page;
  }

  const apiGet = async (path: string) => {
    const res = await fetch(`${admin}/api/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(res.status, 200, `${path}: ${res.status}`);
    return (await res.json()) as Record<string, unknown>;
  };

  it('serves the page with its security headers and no token needed for the files', async () => {
    const res = await fetch(`${admin}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'.*connect-src 'self'/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    // The API itself still wants the token.
    assert.equal((await fetch(`${admin}/api/v1/runs`)).status, 401);
  });

  it('a wrong token gets a clear message and is not kept', async () => {
    const page = await newPage();
    await signIn(page, 'not-the-admin-token-0000000000');
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'That token was refused (401)' }).waitFor({ timeout: 5000 });
    assert.equal(await page.getByLabel('Admin token').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    assert.equal(await page.locator('#dash').isVisible(), false);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it('keyboard only: Tab reaches the token field, Enter signs in; the token is kept in sessionStorage only', async () => {
    const page = await newPage();
    let focused = '';
    for (let i = 0; i < 5 && focused !== 'token'; i++) {
      await page.keyboard.press('Tab');
      focused = await page.evaluate(() => document.activeElement?.id ?? '');
    }
    assert.equal(focused, 'token', 'Tab did not reach the token field within 5 presses');
    await page.keyboard.type(ADMIN_TOKEN);
    await page.keyboard.press('Enter');
    await page.locator('#dash').waitFor({ state: 'visible', timeout: 5000 });
    // Focus moved into the dashboard (its first heading), not left on a vanished form.
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'overview-h');
    const kept = await page.evaluate(() => ({
      session: Object.values(sessionStorage),
      local: localStorage.length,
      cookie: document.cookie,
      url: location.href,
    }));
    assert.deepEqual(kept.session, [ADMIN_TOKEN]);
    assert.equal(kept.local, 0);
    assert.equal(kept.cookie, '');
    assert.ok(!kept.url.includes(ADMIN_TOKEN));
    assert.deepEqual(await browser.context.cookies(), []);
    // A reload keeps the session (the tab's sessionStorage) without asking again.
    await page.reload();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('#login').isVisible(), false);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it('a wake sent with curl shows up within a second, and so does a refused request', async () => {
    const page = await liveDashboard();
    const text = uniq('disk almost full on db-1');
    const started = Date.now();
    const { stdout } = await promisify(execFile)('curl', [
      '-sS',
      '-X',
      'POST',
      `${hg.url}/hooks/wake`,
      '-H',
      `Authorization: Bearer ${TOKEN}`,
      '-H',
      'Content-Type: application/json',
      '--data',
      JSON.stringify({ text, mode: 'next-heartbeat' }),
    ]);
    const eventId = (JSON.parse(stdout) as { eventId: string }).eventId;
    assert.ok(eventId, stdout);
    const line = page.locator(`#received-list li[data-ids~="${eventId}"]`);
    await line.waitFor({ timeout: 1000 });
    const elapsed = Date.now() - started;
    assert.ok(elapsed <= 1000, `the wake showed after ${elapsed} ms`);
    // The line names the request's hook sub-path and its status, and says accepted (for screen readers too).
    assert.match((await line.textContent()) ?? '', /200\s*wake\s*accepted/);
    // Its text is among the main session's pending events (read through the API on the feed's event).
    await page.locator('#pending-list li', { hasText: text }).waitFor({ timeout: 2000 });

    const refused = await hg.post('/hooks/wake', { text: 'x' }, { authorization: 'Bearer wrong-hook-token-000000000' });
    assert.equal(refused.status, 401);
    await page.locator('#received-list li.refused', { hasText: '401' }).first().waitFor({ timeout: 1000 });
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it("an agent run's detail shows its message, reply and transcript; Escape closes it and focus returns", async () => {
    const page = await liveDashboard();
    const message = uniq('summarise the release notes');
    const runId = await postAgent(hg, { message, wakeMode: 'next-heartbeat', deliver: false });
    const row = page.locator(`#runs-body tr[data-run="${runId}"]`);
    await row.locator('.badge', { hasText: 'succeeded' }).waitFor({ timeout: 15_000 });
    const reply = ((await apiGet(`/runs/${runId}`)).reply ??
      ((await apiGet(`/runs/${runId}`)).run as Record<string, unknown>)?.reply) as string;
    assert.match(reply, new RegExp(message));

    const opener = row.getByRole('button', { name: `Details of run ${runId}` });
    await opener.click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.locator('pre.reply', { hasText: reply }).waitFor({ timeout: 5000 });
    assert.match((await dialog.textContent()) ?? '', new RegExp(`Message[\\s\\S]*${message}`));
    await dialog.locator('.turns li', { hasText: reply }).waitFor({ timeout: 5000 });

    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(
      await page.evaluate(() => document.activeElement?.getAttribute('aria-label')),
      `Details of run ${runId}`,
    );
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it('a run that ends while the runs list is on its way keeps its row and its state', async () => {
    // One run that the list will hold, so that its arrival shows.
    const older = await postAgent(hg, { message: uniq('listed before'), wakeMode: 'next-heartbeat', deliver: false });
    await waitFor('the first run ends', async () => (await apiGet(`/runs/${older}`)).state === 'succeeded', 10_000);
    const page = await liveDashboard();
    // The list the filter asks for is read now, before the next run exists, and handed to the page only after the
    // feed has shown that run end.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held: Promise<void> | undefined;
    await page.route(
      (url) => url.pathname === '/api/v1/runs',
      (route) => {
        if (held) return route.continue();
        held = (async () => {
          const response = await route.fetch();
          await released;
          await route.fulfill({ response });
        })();
        return held;
      },
    );
    await page.getByRole('radio', { name: 'succeeded' }).check();
    await waitFor('the list is asked for', async () => held !== undefined, 10_000);
    const runId = await postAgent(hg, { message: uniq('ends meanwhile'), wakeMode: 'next-heartbeat', deliver: false });
    const row = page.locator(`#runs-body tr[data-run="${runId}"]`);
    await row.locator('.badge', { hasText: 'succeeded' }).waitFor({ timeout: 15_000 });
    release();
    await held;
    await page.locator(`#runs-body tr[data-run="${older}"]`).waitFor({ timeout: 10_000 });
    assert.equal(await row.locator('.badge', { hasText: 'succeeded' }).count(), 1, 'the row is still there, ended');
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it('a dead-lettered delivery is retried with a click and turns sent', async () => {
    const page = await liveDashboard();
    // Both attempts refused: the delivery is dead-lettered.
    receiver.script.push({ status: 500 }, { status: 500 });
    const runId = await postAgent(hg, {
      message: uniq('page the on-call'),
      channel: 'webhook',
      to: 'ops',
      wakeMode: 'next-heartbeat',
    });
    const item = page.locator('#deliveries-list li', {
      has: page.getByRole('button', { name: `Details of run ${runId}` }),
    });
    await item.waitFor({ timeout: 15_000 });
    await item.locator('.badge', { hasText: 'failed' }).waitFor();
    const before = receiver.received.length;

    await item.getByRole('button', { name: /^Retry delivery/ }).click();
    await item.locator('.badge', { hasText: 'sent' }).waitFor({ timeout: 10_000 });
    assert.equal(receiver.received.length, before + 1, 'the retry reached the receiver once');
    assert.equal(receiver.received.at(-1)!.verified, true);
    // The row is still there, focused, and offers no second retry.
    assert.equal(await item.getByRole('button', { name: /^Retry/ }).count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('delivery')), true);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it('runs show their name and a session label, times carry the date; a refusal seen live is still listed after a reload', async () => {
    const named = await postAgent(hg, {
      message: uniq('build report'),
      name: 'CI',
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    const unnamed = await postAgent(hg, { message: uniq('no name'), deliver: false, wakeMode: 'next-heartbeat' });
    const keyed = await postAgent(hg, {
      message: uniq('pr'),
      name: 'GitHub PR',
      sessionKey: 'hook:github:acme/app#42',
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    const page = await liveDashboard();
    const row = (id: string) => page.locator(`#runs-body tr[data-run="${id}"]`);
    await row(keyed).waitFor({ timeout: 10_000 });
    assert.equal(await row(named).locator('.c-hook').textContent(), 'CI');
    assert.equal(await row(unnamed).locator('.c-hook').textContent(), 'agent');
    // A run's own session reads as such, with the end of its id; a named key without `hook:`; the full key on hover.
    const own = row(named).locator('.c-session');
    assert.match((await own.textContent()) ?? '', /^own session …[0-9a-f]{6}$/);
    assert.match((await own.getAttribute('title')) ?? '', /^hook:[0-9a-f-]{36}$/);
    assert.equal(await row(keyed).locator('.c-session').textContent(), 'github:acme/app#42');
    // Today's time is the clock; the ISO time is in the title. An older time carries its date.
    const time = row(named).locator('time');
    assert.match((await time.getAttribute('title')) ?? '', /^\d{4}-\d\d-\d\dT/);
    const older = await page.evaluate(async () => {
      const { formatTime } = await import(`${location.origin}/dom.js`);
      const at = Date.now() - 3 * 86_400_000;
      return { text: formatTime(at), month: new Date(at).toLocaleDateString(undefined, { month: 'short' }) };
    });
    assert.ok(older.text.includes(older.month), JSON.stringify(older));

    const refused = await hg.post('/hooks/wake', { text: 'x' }, { authorization: 'Bearer wrong-hook-token-111111111' });
    assert.equal(refused.status, 401);
    await page.locator('#received-list li.refused', { hasText: '401' }).first().waitFor({ timeout: 2000 });
    await page.reload();
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    await page.locator('#received-list li.refused', { hasText: 'unauthorized' }).first().waitFor({ timeout: 2000 });
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it('the refused filter follows the short API pages to a refusal behind 300 accepted requests', async () => {
    const marker = uniq('bad');
    const bad = await hg.post('/hooks/agent', { message: '', name: marker });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /invalid_payload/);
    await new Promise((r) => setTimeout(r, 1500)); // its window of counts ends and is stored
    // More committed batches after it than one filtered API page reads (256 blocks): one wake at a time.
    for (let i = 0; i < 300; i++) assert.equal((await hg.post('/hooks/wake', { text: `filler ${i}` })).status, 200);
    const first = await apiGet('/received?outcome=rejected&limit=50');
    const listed = (first.items as { code?: string; live?: boolean }[]).filter((r) => !r.live);
    assert.ok(first.nextCursor, 'the API page stops short with a cursor');
    assert.ok(!listed.some((r) => r.code === 'invalid_payload'), 'the refusal is not on the first API page');

    const page = await liveDashboard();
    await page.locator('#received-filter').selectOption('rejected');
    await page.locator('#received-list li.refused', { hasText: 'invalid_payload' }).first().waitFor({ timeout: 5000 });
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it('the last hour is broken down: a chart by code, and tables by path, by code, by channel', async () => {
    receiver.script.push({ status: 500 }, { status: 500 });
    const runId = await postAgent(hg, {
      message: uniq('dead letter'),
      name: 'Deploy',
      channel: 'webhook',
      to: 'ops',
      wakeMode: 'next-heartbeat',
    });
    await waitFor(
      'the dead letter',
      async () => {
        const page = (await apiGet('/deliveries?state=failed&channel=webhook')) as {
          items: Array<Record<string, unknown>>;
        };
        return page.items.some((d) => d.runId === runId);
      },
      15_000,
    );
    for (let i = 0; i < 2; i++)
      assert.equal(
        (await hg.post('/hooks/agent', { message: 'x' }, { authorization: 'Bearer wrong-hook-token-222222222' }))
          .status,
        401,
      );
    // Refusals are recorded off the request path: the page is opened once the breakdown counts both, so what it
    // draws is not a snapshot taken a moment before they were written.
    await waitFor(
      'the two refusals in the breakdown',
      async () => {
        const b = (await apiGet('/breakdown')) as { byPath: Array<{ path: string; codes: Record<string, number> }> };
        return b.byPath.some((p) => p.path.endsWith('agent') && (p.codes.unauthorized ?? 0) >= 2);
      },
      15_000,
    );
    const page = await liveDashboard();
    await page.locator('#bd-codes tbody tr', { hasText: 'unauthorized' }).waitFor({ timeout: 5000 });
    const agent = page.locator('#bd-paths tbody tr', { hasText: 'agent' });
    assert.match((await agent.textContent()) ?? '', /unauthorized ×\d+/);
    await page.locator('#bd-channels tbody tr', { hasText: 'webhook' }).waitFor();
    assert.ok((await page.locator('svg.chart rect.bar-bad').count()) > 0, 'no refusal bar in the chart');
    assert.ok((await page.locator('svg.chart rect.bar-ok').count()) > 0, 'no accepted bar in the chart');
    assert.match((await page.locator('svg.chart').getAttribute('aria-label')) ?? '', /\d+ accepted, \d+ refused/);
    assert.match((await page.locator('#f-failures-parts').textContent()) ?? '', /refused/);
    assert.deepEqual(page.problems, []);
    await page.close();
  });

  it('text reaches 4.5:1 contrast on its background, light and dark (figures, chart axis, tables, runs)', async () => {
    const page = await liveDashboard();
    await page.locator('#bd-codes tbody tr').first().waitFor({ timeout: 5000 });
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const low = (await page.evaluate(CONTRAST_CHECK)) as string[];
      assert.deepEqual(low, [], `${scheme}: low contrast`);
    }
    await page.close();
  });

  it('follows prefers-color-scheme: light and dark backgrounds and text', async () => {
    const page = await liveDashboard();
    const colours = () =>
      page.evaluate(() => ({
        bg: getComputedStyle(document.body).backgroundColor,
        fg: getComputedStyle(document.body).color,
      }));
    await page.emulateMedia({ colorScheme: 'light' });
    const light = await colours();
    await page.emulateMedia({ colorScheme: 'dark' });
    const dark = await colours();
    const lum = (c: string) => (c.match(/\d+/g) ?? []).slice(0, 3).reduce((a, v) => a + Number(v), 0);
    assert.ok(lum(light.bg) > lum(light.fg), `light: ${JSON.stringify(light)}`);
    assert.ok(lum(dark.bg) < lum(dark.fg), `dark: ${JSON.stringify(dark)}`);
    await page.close();
  });

  it('at phone width (375 px) nothing overflows horizontally, the run detail included', async () => {
    const page = await liveDashboard(375);
    await page.locator('#runs-body tr').first().waitFor({ timeout: 10_000 });
    const overflow = () =>
      page.evaluate(() => {
        const wide = [...document.querySelectorAll('body *')].filter(
          (e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && e.getClientRects().length > 0,
        );
        return {
          scroll: document.documentElement.scrollWidth,
          client: document.documentElement.clientWidth,
          wide: wide.slice(0, 5).map((e) => `${e.tagName}.${e.className}`),
        };
      });
    await page.locator('#bd-chart svg').waitFor({ timeout: 5000 });
    const o = await overflow();
    assert.ok(o.scroll <= 375, `page is ${o.scroll} px wide; too wide: ${o.wide.join(', ')}`);
    assert.deepEqual(o.wide, []);
    await page.locator('#runs-body tr button').first().click();
    await page.getByRole('dialog').locator('pre').first().waitFor();
    const d = await overflow();
    assert.deepEqual(d.wide, [], 'the run detail overflows');
    assert.deepEqual(page.problems, []);
    await page.close();
  });
});
