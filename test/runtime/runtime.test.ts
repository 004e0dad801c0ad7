/**
 * The runtime as `startRuntime` wires it, on SQLite: a claim queued behind the write that makes its work shares that
 * write's commit (the accept's for a run, the completion's for its delivery), and a run in its own session claims
 * nothing when it ends. On a store whose claims are round trips (PostgreSQL) each claim follows the commit.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { Channel, SendResult } from '../../src/channels/types.js';
import type { RuntimeClusterStore } from '../../src/runtime/env.js';
import { type Runtime, startRuntime } from '../../src/runtime/runtime.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { overlay } from '../support/overlay.js';
import { waitFor } from '../support/runtime-kit.js';
import { command, run } from '../store/contract.js';
import { envWithChannel, type RuntimeKit, startRuntimeKit } from './kit.js';

describe('runtime: claims ride the commits that make their work', () => {
  let kit: RuntimeKit;
  let store: SqliteStore;
  let runtime: Runtime | undefined;
  /** Ops per commit, in order. */
  let commits: number[];
  let claims: { runs: number; deliveries: number };

  beforeEach(async () => {
    kit = await startRuntimeKit({ handler: () => 'the reply' });
    commits = [];
    claims = { runs: 0, deliveries: 0 };
    store = new SqliteStore({ path: ':memory:', writer: 'inline', onCommit: (_ms, ops) => commits.push(ops) });
  });

  afterEach(async () => {
    await runtime?.close();
    runtime = undefined;
    await store.close();
    await kit.close();
  });

  /** The runtime over `store` (its claims counted), delivering to a channel `test` that answers ok. */
  async function start(claimRoundTrip: boolean): Promise<void> {
    const channel: Channel = {
      id: 'test',
      maxTextLength: 4000,
      send: async (): Promise<SendResult> => ({ ok: true }),
    } as unknown as Channel;
    const env = envWithChannel(kit.env, channel);
    const counted = overlay<RuntimeClusterStore>(store, {
      claimRoundTrip,
      claimRuns: (...a) => (claims.runs++, store.claimRuns(...a)),
      claimDeliveries: (...a) => (claims.deliveries++, store.claimDeliveries(...a)),
    });
    runtime = await startRuntime({ ...kit.deps, store: counted, env: () => env });
    await waitFor('the start-up claims to commit', async () => commits.length >= 1, 5000);
    await new Promise((r) => setTimeout(r, 50));
    commits = [];
    claims = { runs: 0, deliveries: 0 };
  }

  /** Accept one delivering run as the ingress does (hooks/dispatch.ts), and wait for its delivery. */
  async function acceptAndDeliver(): Promise<void> {
    const r = run({ createdAt: Date.now(), channel: 'test', to: 'chat-1', deliver: true, wakeMode: 'next-heartbeat' });
    const accepted = store.accept(command({ runs: [r] }));
    const claimed = runtime!.signals.runsAccepting?.() === true;
    await accepted;
    runtime!.signals.runsQueued([r], claimed);
    await waitFor(
      'the delivery to be delivered',
      async () => (await store.listDeliveries({ runId: r.id }))[0]?.state === 'delivered',
      10_000,
    );
    await new Promise((res) => setTimeout(res, 50)); // any claim that would follow
  }

  it('SQLite: accept and run claim in one commit, completion and delivery claim in one, then the delivered mark', async () => {
    await start(false);
    await acceptAndDeliver();
    assert.deepEqual(
      commits,
      [2, 2, 1],
      'three commits: [accept, claimRuns], [completeRun, claimDeliveries], [finish]',
    );
    assert.deepEqual(claims, { runs: 1, deliveries: 1 }, 'no claim after the run or the delivery ended');
  });

  it('claims that are round trips (PostgreSQL): each claim after the commit that made its work', async () => {
    await start(true);
    await acceptAndDeliver();
    assert.deepEqual(commits, [1, 1, 1, 1, 1], 'accept, claimRuns, completeRun, claimDeliveries, finish');
    assert.deepEqual(claims, { runs: 1, deliveries: 1 });
  });
});
