/**
 * Helpers of the runtime end-to-end tests (runtime, crash, outbox): polling for a condition (the shared `waitFor`,
 * passed on), a read view of the server's store, the CLI against the server's config, posting hooks, and reading
 * what a webhook receiver got.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { openStore } from '../../src/store/open.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Run, Store } from '../../src/store/types.js';
import { fromRoot } from './paths.js';
import { type Hookgate, runCli, type StartOptions, startHookgate, storageByDir } from './server.js';
import { waitFor } from './wait.js';
import type { ReceivedWebhook, WebhookReceiver } from './webhook-receiver.js';

export const AGENT_SCRIPT = fromRoot('test/support/agent.mjs');

/** A Standard Webhooks secret (`whsec_` + base64 of 32 bytes). */
export function webhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export { waitFor };

/** `startHookgate` with a config object, in a temp dir of its own (removed by `hg.cleanup()`, or when the file's tests end). */
export function startServer(
  config: Record<string, unknown>,
  opts: Omit<StartOptions, 'config'> = {},
): Promise<Hookgate> {
  return startHookgate({ ...opts, config });
}

/**
 * A second connection to the server's store, for reads (the server keeps writing through its own): its SQLite file,
 * or under HOOKGATE_TEST_STORE=postgres its database through the PostgreSQL driver. Typed as the SQLite store so
 * the tests need no change; on PostgreSQL only the Store interface's methods are there (each opens the driver's
 * store on first use; a SQLite-only method is undefined there).
 */
export function openServerStore(hg: Hookgate): SqliteStore {
  return openStoreAt(hg.dir);
}

/** `openServerStore` by the server's dir (`data/hookgate.db` in it, or its PostgreSQL database). */
export function openStoreAt(dir: string): SqliteStore {
  const storage = storageByDir.get(dir);
  if (storage?.driver !== 'postgres') return new SqliteStore({ path: join(dir, 'data/hookgate.db'), writer: 'inline' });
  return lazyStore(
    openStore({ driver: 'postgres', url: storage.url, poolSize: 2 }, (p) => p, {
      writer: 'inline',
      checkpoints: 'auto',
      schemaPolicy: 'migrate',
    }),
  );
}

/** A Store whose methods wait for `opening`; `close` before any use closes it once opened. */
function lazyStore(opening: Promise<Store>): SqliteStore {
  opening.catch(() => undefined); // reported by the first call
  return new Proxy({} as Record<string | symbol, unknown>, {
    get(_, name) {
      if (name === 'then') return undefined; // not a thenable
      return async (...args: unknown[]) => {
        const store = (await opening) as unknown as Record<string | symbol, (...a: unknown[]) => unknown>;
        const fn = store[name];
        if (typeof fn !== 'function')
          throw new Error(`openServerStore: ${String(name)} is not a method of the PostgreSQL store`);
        return fn.apply(store, args);
      };
    },
  }) as unknown as SqliteStore;
}

/** `hookgate <args> --config <the server's config>`, run from the server's directory. */
export function cli(hg: Hookgate, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return runCli([...args, '--config', hg.configFile], { cwd: hg.dir });
}

/** The pending count printed by `hookgate sessions show KEY`. */
export function pendingFromShow(stdout: string): number {
  const m = /pending system events \((\d+)\):/.exec(stdout);
  assert.ok(m, `no pending line in:\n${stdout}`);
  return Number(m[1]);
}

/** POST /hooks/agent; asserts the 200 and returns the run id. */
export async function postAgent(hg: Hookgate, body: Record<string, unknown>): Promise<string> {
  const r = await hg.post('/hooks/agent', body);
  assert.equal(r.status, 200, `agent request answered ${r.status}: ${r.text}`);
  assert.equal(typeof r.body?.runId, 'string');
  return r.body!.runId as string;
}

/** POST /hooks/wake; asserts the 200 and returns the event id. */
export async function postWake(hg: Hookgate, text: string, mode: 'now' | 'next-heartbeat' = 'now'): Promise<string> {
  const r = await hg.post('/hooks/wake', { text, mode });
  assert.equal(r.status, 200, `wake answered ${r.status}: ${r.text}`);
  return r.body!.eventId as string;
}

const FINISHED = new Set(['succeeded', 'failed', 'timed_out']);

/** Waits until the run is finished (any final state) and returns it. */
export function waitForRun(store: SqliteStore, runId: string, timeoutMs = 15_000): Promise<Run> {
  return waitFor(
    `run ${runId} to finish`,
    async () => {
      const r = await store.getRun(runId);
      return r && FINISHED.has(r.state) ? r : undefined;
    },
    timeoutMs,
  );
}

/** Log lines of the current process (since the last restart) from index `from` on. */
export function logsSince(hg: Hookgate, from = 0): Array<Record<string, unknown>> {
  return hg.logs.slice(from);
}

export interface WebhookDelivery {
  id: string;
  verified: boolean;
  body: Record<string, unknown>;
  raw: ReceivedWebhook;
}

/** What a webhook receiver got, parsed. */
export function webhookDeliveries(receiver: WebhookReceiver): WebhookDelivery[] {
  return receiver.received.map((r) => ({
    id: String(r.headers['webhook-id'] ?? ''),
    verified: r.verified,
    body: JSON.parse(r.body) as Record<string, unknown>,
    raw: r,
  }));
}
