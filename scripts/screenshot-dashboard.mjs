#!/usr/bin/env node
// Takes the dashboard's screenshots for docs/admin.md: docs/admin-dashboard.png (1440×1000, light),
// docs/admin-dashboard-dark.png (1440×1000, dark) and docs/admin-dashboard-mobile.png (375×1500, light). The built
// server (npm run build first) runs in a temp dir with its admin listener. Its store is first given an hour of
// history through the store's own API (wakes and agent requests every minute, a burst of 401s and a lockout 40
// minutes ago); then live traffic: wakes, named agent runs, a few 401s, a delivery to a receiver that answers 500
// (dead-lettered). Headless Chromium is Debian's /usr/bin/chromium.
//   node scripts/screenshot-dashboard.mjs [--out-dir DIR]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const root = new URL('..', import.meta.url).pathname;
const outArg = process.argv.indexOf('--out-dir');
const outDir = outArg > 0 ? process.argv[outArg + 1] : join(root, 'docs');
const HOOK_TOKEN = 'screenshot-hook-token-0123456789';
const ADMIN_TOKEN = 'screenshot-admin-token-0123456789';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

// A webhook target that refuses everything: its delivery ends dead-lettered, with a Retry button on the page.
const refuser = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(500).end('upstream down'));
});
await new Promise((r) => refuser.listen(0, '127.0.0.1', r));

const dir = mkdtempSync(join(tmpdir(), 'hookgate-shot-'));
const adminPort = await freePort();
const config = {
  gateway: { port: 0 },
  storage: { driver: 'sqlite', path: './data/hookgate.db' },
  hooks: { enabled: true, token: HOOK_TOKEN, allowRequestSessionKey: true },
  heartbeat: { every: 'off' },
  agents: { defaults: { model: 'echo/echo' } },
  admin: { enabled: true, bind: '127.0.0.1', port: adminPort, token: ADMIN_TOKEN },
  channels: {
    outbox: { initialBackoffMs: 50, maxBackoffMs: 200, maxAttempts: 2 },
    webhook: {
      targets: {
        ops: {
          url: `http://127.0.0.1:${refuser.address().port}/hook`,
          secret: `whsec_${randomBytes(32).toString('base64')}`,
        },
      },
    },
  },
};
writeFileSync(join(dir, 'hookgate.json5'), JSON.stringify(config));

// An hour of history, written before the service starts (it would write the same records as it answered them).
const { openStore } = await import(join(root, 'dist/store/open.js'));
const store = await openStore(config.storage, (p) => join(dir, p), { writer: 'inline' });
const t0 = Date.now() - 3_600_000;
const rec = (at, path, status, code = null) => ({
  at,
  method: 'POST',
  path,
  clientIp: '10.0.4.17',
  status,
  code,
  eventIds: [],
  runIds: [],
  mappingId: null,
  durationMs: 1.2,
});
for (let m = 0; m < 59; m++) {
  const at = t0 + m * 60_000;
  for (let i = 0; i < 2 + ((m * 7) % 5); i++)
    await store.recordReceived(rec(at + i * 9000, i % 3 ? 'wake' : 'agent', 200));
  if (m % 15 === 7) await store.recordReceived(rec(at + 31_000, 'github', 200));
  const minute = at - (at % 60_000);
  if (m >= 18 && m <= 21) {
    await store.recordRefusals(
      {
        at: minute,
        windowMs: 60_000,
        counts: [
          { status: 401, code: 'unauthorized', path: 'github', bucket: '140.82.112.0/20', count: m === 21 ? 4 : 6 },
          ...(m === 21
            ? [{ status: 429, code: 'rate_limited', path: 'github', bucket: '140.82.112.0/20', count: 5 }]
            : []),
        ],
      },
      1440,
    );
  }
  if (m === 44)
    await store.recordRefusals(
      {
        at: minute,
        windowMs: 60_000,
        counts: [{ status: 404, code: 'not_found', path: 'other', bucket: '203.0.113.0/24', count: 3 }],
      },
      1440,
    );
}
await store.close();
const proc = spawn(
  process.execPath,
  [join(root, 'dist/cli/main.js'), 'serve', '--config', join(dir, 'hookgate.json5')],
  { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
);
const hooksUrl = await new Promise((resolve, reject) => {
  proc.once('exit', (code) => reject(new Error(`hookgate exited with ${code}`)));
  createInterface({ input: proc.stdout }).on('line', (l) => {
    try {
      const j = JSON.parse(l);
      if (j.msg === 'hookgate listening') resolve(j.url);
    } catch {
      /* plain line */
    }
  });
});
const admin = `http://127.0.0.1:${adminPort}`;
for (let i = 0; i < 50 && !(await fetch(`${admin}/healthz`).catch(() => null))?.ok; i++) await sleep(100);

const post = (path, body, token = HOOK_TOKEN) =>
  fetch(`${hooksUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

const profile = mkdtempSync(join(tmpdir(), 'hookgate-shot-profile-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--no-first-run',
  ],
});
try {
  const page = await browser.newPage();
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.goto(`${admin}/`);
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });

  // Traffic over a few seconds, so the sparkline has a shape: named runs, an unnamed one, a run of a named session.
  await post('/hooks/wake', { text: 'Backup of db-1 finished (12.4 GB)', mode: 'next-heartbeat' });
  await post('/hooks/wake', { text: 'Disk 91% full on web-3', mode: 'next-heartbeat' });
  await post('/hooks/agent', {
    message: 'Deploy of api v2.14.0 to production failed; page the on-call',
    name: 'Deploy',
    channel: 'webhook',
    to: 'ops',
    wakeMode: 'next-heartbeat',
  });
  const names = ['CI', 'Nightly', 'PagerDuty', 'CI'];
  for (let i = 0; i < 24; i++) {
    const kind = i % 6;
    if (kind === 5) await post('/hooks/wake', { text: 'x' }, 'wrong-token-0000000000000000');
    else if (kind === 3)
      await post('/hooks/agent', {
        message: `PR #${40 + i} opened: review the diff`,
        name: 'GitHub PR',
        sessionKey: `hook:github:acme/app#${40 + i}`,
        deliver: false,
        wakeMode: 'next-heartbeat',
      });
    else if (kind % 2)
      await post('/hooks/agent', {
        message: `Build ${1200 + i} report`,
        ...(i === 1 ? {} : { name: names[i % 4] }),
        deliver: false,
        wakeMode: 'next-heartbeat',
      });
    else await post('/hooks/wake', { text: `CI build ${1200 + i} passed`, mode: 'next-heartbeat' });
    await sleep(150 + ((i * 97) % 5) * 60);
  }
  await page.locator('#deliveries-list li').first().waitFor({ timeout: 10_000 });
  await sleep(1500);
  // The breakdown reloads at most every 5 s: reload the page so every part shows the same moment.
  await page.reload();
  await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
  await page.locator('#bd-codes tbody tr').first().waitFor({ timeout: 10_000 });
  await sleep(800);
  const shots = [
    { file: 'admin-dashboard.png', width: 1440, scheme: 'light' },
    { file: 'admin-dashboard-dark.png', width: 1440, scheme: 'dark' },
    { file: 'admin-dashboard-mobile.png', width: 375, scheme: 'light' },
  ];
  for (const s of shots) {
    await page.emulateMedia({ colorScheme: s.scheme });
    await page.setViewportSize({ width: s.width, height: s.width < 600 ? 1500 : 1000 });
    await sleep(300);
    await page.locator('#received-list').evaluate((e) => e.scrollTo(0, 0));
    const path = join(outDir, s.file);
    // What the window shows: the phone's tall window reaches from the figures through the breakdown to the first list.
    await page.screenshot({ path, scale: 'css' });
    console.log(`wrote ${path}`);
  }
} finally {
  await browser.close();
  proc.kill('SIGTERM');
  refuser.close();
  await new Promise((r) => proc.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
  rmSync(profile, { recursive: true, force: true });
}
