/**
 * Helpers of the runtime end-to-end tests (runtime, crash, outbox): polling for a condition, a read view of the
 * server's store, the CLI against the server's config, posting hooks, and reading what a webhook receiver got.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { Run } from '../../src/store/types.js';
import { type Hookgate, runCli, startHookgate } from './server.js';
import type { ReceivedWebhook, WebhookReceiver } from './webhook-receiver.js';

export const AGENT_SCRIPT = new URL('./agent.mjs', import.meta.url).pathname;

/** A Standard Webhooks secret (`whsec_` + base64 of 32 bytes). */
export function webhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * Polls `fn` until it returns something other than undefined/false/null (returned), or fails after `timeoutMs`
 * with `what` and the last value seen. Never a fixed sleep: on a loaded machine it simply takes longer.
 */
export async function waitFor<T>(what: string, fn: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs = 10_000, everyMs = 40): Promise<T> {
  const start = Date.now();
  const stuck = Symbol('stuck');
  let last: unknown;
  for (;;) {
    try {
      // A check that never settles must not hang the test: it counts as "not yet" until the time is up.
      let timer: NodeJS.Timeout | undefined;
      const v = await Promise.race([
        Promise.resolve().then(fn),
        new Promise<typeof stuck>((resolve) => (timer = setTimeout(() => resolve(stuck), Math.max(50, timeoutMs - (Date.now() - start))))),
      ]).finally(() => clearTimeout(timer));
      if (v === stuck) last = 'the check did not settle';
      else if (v !== undefined && v !== null && v !== false) return v as T;
      else last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() - start > timeoutMs) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * `startHookgate` in a temp dir this helper owns: the dir is removed by `hg.cleanup()`, and also when the server
 * fails to start (the harness leaves it behind then).
 */
export async function startServer(config: Record<string, unknown>): Promise<Hookgate> {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-e2e-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  let hg: Hookgate;
  try {
    hg = await startHookgate({ config, dir });
  } catch (err) {
    remove();
    throw err;
  }
  const stop = hg.cleanup;
  hg.cleanup = async () => {
    try {
      await stop();
    } finally {
      remove();
    }
  };
  return hg;
}

/** A second connection to the server's SQLite file, for reads (the server keeps writing through its own). */
export function openServerStore(hg: Hookgate): SqliteStore {
  return new SqliteStore({ path: join(hg.dir, 'data/hookgate.db'), writer: 'inline' });
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
  return waitFor(`run ${runId} to finish`, async () => {
    const r = await store.getRun(runId);
    return r && FINISHED.has(r.state) ? r : undefined;
  }, timeoutMs);
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
