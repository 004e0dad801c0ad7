#!/usr/bin/env node
// Takes docs/admin-dashboard.png: the built server (npm run build first) in a temp dir with its admin listener,
// some traffic (wakes, agent runs, refused requests, one dead-lettered delivery to a receiver that answers 500),
// then the dashboard in headless Chromium (Debian's /usr/bin/chromium), signed in, at 1280×900.
//   node scripts/screenshot-dashboard.mjs [--dark] [--out FILE]
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const root = new URL('..', import.meta.url).pathname;
const dark = process.argv.includes('--dark');
const outArg = process.argv.indexOf('--out');
const out = outArg > 0 ? process.argv[outArg + 1] : join(root, dark ? 'docs/admin-dashboard-dark.png' : 'docs/admin-dashboard.png');
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
  hooks: { enabled: true, token: HOOK_TOKEN },
  heartbeat: { every: 'off' },
  agents: { defaults: { model: 'echo/echo' } },
  admin: { enabled: true, bind: '127.0.0.1', port: adminPort, token: ADMIN_TOKEN },
  channels: {
    outbox: { initialBackoffMs: 50, maxBackoffMs: 200, maxAttempts: 2 },
    webhook: { targets: { ops: { url: `http://127.0.0.1:${refuser.address().port}/hook`, secret: `whsec_${randomBytes(32).toString('base64')}` } } },
  },
};
writeFileSync(join(dir, 'hookgate.json5'), JSON.stringify(config));
const proc = spawn(process.execPath, [join(root, 'dist/cli/main.js'), 'serve', '--config', join(dir, 'hookgate.json5')], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
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
  fetch(`${hooksUrl}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

const profile = mkdtempSync(join(tmpdir(), 'hookgate-shot-profile-'));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
try {
  const page = await browser.newPage();
  await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(`${admin}/`);
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });

  // Traffic over a few seconds, so the sparkline has a shape.
  await post('/hooks/wake', { text: 'Backup of db-1 finished (12.4 GB)', mode: 'next-heartbeat' });
  await post('/hooks/wake', { text: 'Disk 91% full on web-3', mode: 'next-heartbeat' });
  await post('/hooks/agent', { message: 'Deploy of api v2.14.0 to production failed; page the on-call', channel: 'webhook', to: 'ops', wakeMode: 'next-heartbeat' });
  for (let i = 0; i < 24; i++) {
    const kind = i % 6;
    if (kind === 5) await post('/hooks/wake', { text: 'x' }, 'wrong-token-0000000000000000');
    else if (kind % 2) await post('/hooks/agent', { message: `PR #${40 + i} opened: review the diff`, deliver: false, wakeMode: 'next-heartbeat' });
    else await post('/hooks/wake', { text: `CI build ${1200 + i} passed`, mode: 'next-heartbeat' });
    await sleep(150 + ((i * 97) % 5) * 60);
  }
  await page.locator('#deliveries-list li').first().waitFor({ timeout: 10_000 });
  await sleep(1500);
  await page.locator('#received-list').evaluate((e) => e.scrollTo(0, 0));
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
  proc.kill('SIGTERM');
  refuser.close();
  await new Promise((r) => proc.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
  rmSync(profile, { recursive: true, force: true });
}
