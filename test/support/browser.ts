/**
 * A real headless Chromium for the dashboard's tests: Debian's `chromium` package (installed by .ci/run) driven by
 * playwright-core, which ships no browser of its own. Each launch gets a fresh profile directory (removed by
 * `close()`), so no state carries from one test file to another.
 *
 * Without /usr/bin/chromium the tests skip with that reason, unless `HOOKGATE_REQUIRE_SERVICES=1` (CI), where
 * `skipWithoutChromium` throws instead (the same rule as PostgreSQL, test/support/pg-database.ts).
 */
import { existsSync } from 'node:fs';
import { type BrowserContext, chromium } from 'playwright-core';
import { servicesRequired } from './pg-database.js';
import { removeDir, tempDir } from './temp-dir.js';

export const CHROMIUM = process.env.HOOKGATE_TEST_CHROMIUM || '/usr/bin/chromium';

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** For a test's `skip` option: false when Chromium is there, the reason when not; throws under HOOKGATE_REQUIRE_SERVICES=1. */
export function skipWithoutChromium(): string | false {
  if (existsSync(CHROMIUM)) return false;
  const why = `${CHROMIUM} is missing (apt-get install chromium)`;
  if (servicesRequired()) throw new Error(`HOOKGATE_REQUIRE_SERVICES=1 and ${why}`);
  return why;
}

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium with a fresh `--user-data-dir` (playwright passes the directory as that flag). */
export async function launchChromium(): Promise<TestBrowser> {
  const profile = tempDir('hookgate-chromium-');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    timeout: 30_000,
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      removeDir(profile);
    },
  };
}
