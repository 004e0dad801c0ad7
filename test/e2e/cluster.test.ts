/**
 * Scale-out (docs/reference.md#cluster-on-postgresql): several real `hookgate serve` processes on one PostgreSQL
 * database. Each test makes its own cluster on a fresh database (test/support/cluster.ts) and looks from the outside:
 * what the webhook receiver got, what each node's model stand-in was asked, what the HTTP answers said, and (for the
 * counts) the shared tables. Skips without a reachable PostgreSQL (fails under HOOKGATE_REQUIRE_SERVICES=1). Run
 * `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type Cluster, startCluster } from '../support/cluster.js';
import { skipWithoutPostgres } from '../support/pg-database.js';
import { webhookDeliveries, type WebhookDelivery } from '../support/runtime-kit.js';
import { delay } from '../support/scripted-model.js';
import { CLI, runCli } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const skip = await skipWithoutPostgres();
const clusters: Cluster[] = [];
after(async () => {
  for (const c of clusters.splice(0)) await c.cleanup().catch(() => undefined);
});

async function cluster(opts: Parameters<typeof startCluster>[0]): Promise<Cluster> {
  const c = await startCluster(opts);
  clusters.push(c);
  return c;
}

/** Run a test's own cluster down at its end (the file's `after` catches what a failure left). */
async function done(c: Cluster): Promise<void> {
  clusters.splice(clusters.indexOf(c), 1);
  await c.cleanup();
}

/** `count` tasks over `concurrency` workers. */
async function pool<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await task(i);
      }
    }),
  );
  return out;
}

const tagOf = (text: string, prefix: string) => new RegExp(`${prefix}-\\d+`).exec(text)?.[0];

/** Deliveries by run id: distinct webhook ids and the number of HTTP requests. */
function byRun(got: WebhookDelivery[]): Map<string, { ids: Set<string>; requests: number; texts: Set<string> }> {
  const out = new Map<string, { ids: Set<string>; requests: number; texts: Set<string> }>();
  for (const d of got) {
    const runId = String(d.body.runId);
    let e = out.get(runId);
    if (!e) out.set(runId, (e = { ids: new Set(), requests: 0, texts: new Set() }));
    e.ids.add(d.id);
    e.requests++;
    e.texts.add(String(d.body.text));
  }
  return out;
}

const agentBody = (tag: string) => ({
  message: `${tag}: summarise`,
  name: tag,
  channel: 'webhook',
  to: 'ops',
  wakeMode: 'next-heartbeat',
});

describe('a cluster of hookgate nodes on one PostgreSQL database', { skip, timeout: 600_000 }, () => {
  it('300 agent runs posted round-robin to 3 nodes: each runs once and is delivered exactly once', {
    timeout: 240_000,
  }, async (t) => {
    const c = await cluster({
      nodes: 3,
      model: (call) => `done: ${tagOf(call.lastUser, 'c300') ?? '?'}`,
    });
    const total = 300;
    const t0 = Date.now();
    const accepted = await pool(total, 15, async (i) => {
      const tag = `c300-${i}`;
      const { node, result } = await c.post('/hooks/agent', agentBody(tag));
      assert.equal(result.status, 200, `run ${tag} on node ${node}: ${result.status} ${result.text}`);
      return { tag, node, runId: String(result.body?.runId) };
    });
    const acceptSeconds = (Date.now() - t0) / 1000;
    assert.equal(new Set(accepted.map((a) => a.runId)).size, total, 'two requests were answered with one run id');

    await waitFor(
      `a delivery of each of the ${total} runs`,
      () => {
        const got = byRun(webhookDeliveries(c.receiver));
        return accepted.every((a) => got.has(a.runId));
      },
      { timeoutMs: 180_000, intervalMs: 200 },
    );
    const allSeconds = (Date.now() - t0) / 1000;
    await delay(1500); // a late duplicate shows up now rather than after the assertions

    const got = webhookDeliveries(c.receiver);
    for (const d of got) assert.ok(d.verified, `unsigned delivery: ${d.raw.failure}`);
    const runs = byRun(got);
    const accIds = new Set(accepted.map((a) => a.runId));
    assert.deepEqual(
      [...runs.keys()].filter((id) => !accIds.has(id)),
      [],
      'deliveries of runs nobody accepted',
    );
    for (const a of accepted) {
      const e = runs.get(a.runId)!;
      assert.equal(
        e.requests,
        1,
        `run ${a.tag} (${a.runId}) was delivered ${e.requests} times (webhook ids ${[...e.ids].join(' ')})`,
      );
      assert.deepEqual([...e.texts], [`done: ${a.tag}`], `run ${a.tag} delivered another run's reply`);
    }
    assert.equal(got.length, total);

    // Each run went to a model once: no two nodes claimed one run.
    const modelCalls = c.models.flatMap((m, node) =>
      m.calls.filter((x) => !x.heartbeat).map((x) => ({ node, tag: tagOf(x.lastUser, 'c300') })),
    );
    const perTag = new Map<string, number[]>();
    for (const m of modelCalls) perTag.set(m.tag ?? '?', [...(perTag.get(m.tag ?? '?') ?? []), m.node]);
    const twice = [...perTag].filter(([, nodes]) => nodes.length > 1);
    assert.deepEqual(twice, [], 'runs executed more than once');
    assert.equal(modelCalls.length, total);

    const states = await c.db.query<{ state: string; attempts: number; n: string }>(
      'SELECT state, attempts, count(*) AS n FROM runs GROUP BY state, attempts',
    );
    assert.deepEqual(
      states.map((r) => [r.state, Number(r.attempts), Number(r.n)]),
      [['succeeded', 1, total]],
    );

    const acceptedBy = [0, 1, 2].map((n) => accepted.filter((a) => a.node === n).length);
    const ranBy = [0, 1, 2].map((n) => modelCalls.filter((m) => m.node === n).length);
    const summary = `${total} runs accepted in ${acceptSeconds.toFixed(1)} s (per node ${acceptedBy.join('/')}), all delivered after ${allSeconds.toFixed(1)} s; run per node ${ranBy.join('/')}; ${got.length} webhook requests, 0 duplicates`;
    t.diagnostic(summary);
    console.log(`cluster: ${summary}`);
    await done(c);
  });

  it('kill -9 of two nodes holding runs: the third delivers every run within the lease time + 30 s', {
    timeout: 240_000,
  }, async (t) => {
    const RUN_LEASE_MS = 30_000; // src/runtime/run-worker.ts
    const c = await cluster({
      nodes: 3,
      // Slow runs, so each node holds some at the model when two of them die.
      model: async (call) => {
        await delay(4000);
        return `done: ${tagOf(call.lastUser, 'kill') ?? '?'}`;
      },
      config: { agents: { defaults: { maxConcurrent: 4 } } },
    });
    const accepted = await pool(15, 5, async (i) => {
      const tag = `kill-${i}`;
      const { result } = await c.post('/hooks/agent', agentBody(tag));
      assert.equal(result.status, 200, `${tag}: ${result.status} ${result.text}`);
      return { tag, runId: String(result.body?.runId) };
    });
    await waitFor(
      'nodes 0 and 1 each running a run at the model',
      () => c.models[0]!.inFlight >= 1 && c.models[1]!.inFlight >= 1,
      { timeoutMs: 20_000, intervalMs: 10 },
    );
    const heldBy = (node: number) =>
      c.models[node]!.calls.filter((x) => x.endedAt === undefined).map((x) => tagOf(x.lastUser, 'kill')!);
    const held = [...heldBy(0), ...heldBy(1)];
    const t0 = Date.now();
    await Promise.all([c.kill9(0), c.kill9(1)]);
    const deliveredBefore = new Set(webhookDeliveries(c.receiver).map((d) => String(d.body.runId)));

    const lastAt = await waitFor(
      'a delivery of every run from the surviving node',
      () => {
        const got = byRun(webhookDeliveries(c.receiver));
        return accepted.every((a) => got.has(a.runId)) ? Date.now() : undefined;
      },
      { timeoutMs: RUN_LEASE_MS + 60_000, intervalMs: 50 },
    );
    const takeoverMs = lastAt - t0;
    await delay(1000);

    const runs = byRun(webhookDeliveries(c.receiver));
    for (const a of accepted) {
      const e = runs.get(a.runId)!;
      assert.equal(e.ids.size, 1, `run ${a.tag} delivered under ${e.ids.size} webhook ids`);
      assert.deepEqual([...e.texts], [`done: ${a.tag}`]);
    }
    // The runs the dead nodes held at the model ran again on the survivor, under the same run ids.
    const survivorTags = new Set(c.models[2]!.calls.map((x) => tagOf(x.lastUser, 'kill')));
    for (const tag of held)
      assert.ok(survivorTags.has(tag), `run ${tag}, held by a killed node, never ran on the survivor`);
    const retaken = await c.db.query<{ id: string; attempts: number }>(
      'SELECT id, attempts FROM runs WHERE attempts >= 2',
    );
    assert.ok(
      retaken.length >= held.length,
      `${retaken.length} runs with attempts ≥ 2, ${held.length} held by the killed nodes`,
    );
    const states = await c.db.query<{ state: string; n: string }>(
      'SELECT state, count(*) AS n FROM runs GROUP BY state',
    );
    assert.deepEqual(
      states.map((r) => [r.state, Number(r.n)]),
      [['succeeded', accepted.length]],
    );

    const summary = `killed nodes 0 and 1 holding ${held.length} runs at the model (${deliveredBefore.size} of ${accepted.length} delivered before); node 2 delivered the last run ${(takeoverMs / 1000).toFixed(1)} s after the kill (bound ${(RUN_LEASE_MS + 30_000) / 1000} s)`;
    t.diagnostic(summary);
    console.log(`cluster: ${summary}`);
    assert.ok(takeoverMs <= RUN_LEASE_MS + 30_000, summary);
    await done(c);
  });

  it('an idempotency key replayed on another node answers duplicate: true with the first run id; concurrent replays make one run', {
    timeout: 120_000,
  }, async () => {
    const c = await cluster({ nodes: 3 });
    const body = agentBody('idem-1');
    const first = await c.nodes[0]!.post('/hooks/agent', body, { 'idempotency-key': 'cluster-key-1' });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body?.duplicate, undefined);
    for (const n of [1, 2, 0]) {
      const again = await c.nodes[n]!.post('/hooks/agent', body, { 'idempotency-key': 'cluster-key-1' });
      assert.equal(again.status, 200, `node ${n}: ${again.text}`);
      assert.equal(again.body?.duplicate, true, `node ${n} did not see the key: ${again.text}`);
      assert.equal(again.body?.runId, first.body?.runId, `node ${n}`);
    }
    // The same key at all three nodes at once: one run, the others duplicates of it.
    for (let k = 0; k < 8; k++) {
      const key = `cluster-race-${k}`;
      const answers = await Promise.all(
        c.nodes.map((hg) => hg.post('/hooks/agent', agentBody(`race-${k}`), { 'idempotency-key': key })),
      );
      for (const a of answers) assert.equal(a.status, 200, a.text);
      assert.equal(
        answers.filter((a) => a.body?.duplicate !== true).length,
        1,
        `key ${key}: ${answers.map((a) => a.text).join(' | ')}`,
      );
      assert.equal(
        new Set(answers.map((a) => a.body?.runId)).size,
        1,
        `key ${key}: ${answers.map((a) => a.text).join(' | ')}`,
      );
    }
    const counts = await c.db.query<{ name: string; n: string }>(
      'SELECT name, count(*) AS n FROM runs GROUP BY name ORDER BY name',
    );
    assert.deepEqual(
      counts.map((r) => [r.name, Number(r.n)]),
      ['idem-1', ...Array.from({ length: 8 }, (_, k) => `race-${k}`)].sort().map((name) => [name, 1]),
    );
    await done(c);
  });

  it('a client locked out on one node is refused with 429 by the others within 2 s', {
    timeout: 120_000,
  }, async (t) => {
    const maxFailures = 30;
    const c = await cluster({
      nodes: 3,
      config: { hooks: { authFailureLimit: { maxFailures, windowSeconds: 120, lockoutSeconds: 120 } } },
    });
    const wrong = { authorization: 'Bearer wrong-token-0123456789abcdef' };
    const wake = { text: 'lockout probe', mode: 'next-heartbeat' };
    // Not locked anywhere yet: a wrong token is a 401 on every node (one failure each, far below the limit).
    for (const hg of c.nodes.slice(1)) assert.equal((await hg.post('/hooks/wake', wake, wrong)).status, 401);

    let lockedAt = 0;
    for (let i = 0; i < maxFailures + 5 && !lockedAt; i++) {
      const r = await c.nodes[0]!.post('/hooks/wake', wake, wrong);
      if (r.status === 429) lockedAt = Date.now();
      else assert.equal(r.status, 401);
    }
    assert.ok(lockedAt, `node 0 never locked the client out after ${maxFailures + 5} wrong tokens`);

    // Probes at 100 ms: at most ~10 per node within the 2 s, far below the limit, so a 429 is the shared lockout.
    const seenAt: Array<number | undefined> = [undefined, undefined, undefined];
    let probes = 0;
    while (Date.now() - lockedAt < 4000 && (seenAt[1] === undefined || seenAt[2] === undefined)) {
      for (const n of [1, 2]) {
        if (seenAt[n] !== undefined) continue;
        probes++;
        const r = await c.nodes[n]!.post('/hooks/wake', wake, wrong);
        if (r.status === 429) seenAt[n] = Date.now();
        else assert.equal(r.status, 401, `node ${n}: ${r.text}`);
      }
      await delay(100);
    }
    const ms = [1, 2].map((n) => (seenAt[n] === undefined ? undefined : seenAt[n]! - lockedAt));
    const summary = `lockout on node 0 seen by node 1 after ${ms[0] ?? 'never'} ms, node 2 after ${ms[1] ?? 'never'} ms (${probes} probes)`;
    t.diagnostic(summary);
    console.log(`cluster: ${summary}`);
    for (const [k, v] of ms.entries()) assert.ok(v !== undefined && v <= 2000, `node ${k + 1}: ${summary}`);
    // The right token still gets in everywhere (a lockout refuses failures, not the real sender).
    for (const hg of c.nodes) assert.equal((await hg.post('/hooks/wake', wake)).status, 200);
    await done(c);
  });

  it('wakes (mode now) sent to three nodes: each event is fed to exactly one heartbeat, never two heartbeats at once', {
    timeout: 180_000,
  }, async (t) => {
    const c = await cluster({
      nodes: 3,
      model: async (call) => {
        if (call.heartbeat) await delay(150);
        return 'HEARTBEAT_OK';
      },
    });
    const texts: string[] = [];
    // Each round reaches the three nodes at once, so all three want the main session's heartbeat at once; rounds are
    // spaced so that many heartbeats happen (wakes within 250 ms coalesce into one).
    for (let round = 0; round < 12; round++) {
      const batch = c.nodes.map((_, n) => `cluster wake r${round} n${n} ${Math.random().toString(36).slice(2, 8)}`);
      texts.push(...batch);
      const answers = await Promise.all(
        c.nodes.map((hg, n) => hg.post('/hooks/wake', { text: batch[n], mode: 'now' })),
      );
      for (const a of answers) assert.equal(a.status, 200, a.text);
      await delay(500);
    }
    const beats = () =>
      c.models.flatMap((m, node) => m.calls.filter((x) => x.heartbeat).map((call) => ({ node, call })));
    await waitFor(
      'every wake in a heartbeat',
      () => texts.every((x) => beats().some((b) => b.call.lastUser.includes(x))),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await waitFor(
      'no event pending',
      async () =>
        Number(
          (await c.db.query<{ n: string }>('SELECT count(*) AS n FROM system_events WHERE consumed_at IS NULL'))[0]!.n,
        ) === 0,
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    await delay(1500); // a second feeding of some event would show up now

    const all = beats();
    for (const x of texts) {
      const fed = all.filter((b) => b.call.lastUser.includes(x));
      assert.equal(fed.length, 1, `"${x}" fed to ${fed.length} heartbeats (nodes ${fed.map((b) => b.node).join(',')})`);
    }
    // One heartbeat at a time for the main session, cluster-wide: no two heartbeat calls overlap.
    const sorted = all
      .map((b) => ({ node: b.node, start: b.call.startedAt, end: b.call.endedAt ?? Infinity }))
      .sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) {
      assert.ok(
        sorted[i]!.start >= sorted[i - 1]!.end,
        `heartbeats overlap: node ${sorted[i - 1]!.node} [${sorted[i - 1]!.start}, ${sorted[i - 1]!.end}] and node ${sorted[i]!.node} from ${sorted[i]!.start}`,
      );
    }
    const events = await c.db.query<{ text: string; heartbeat_id: string | null; consumed_at: string | null }>(
      "SELECT text, heartbeat_id, consumed_at FROM system_events WHERE origin = 'wake' OR text LIKE 'cluster wake%'",
    );
    for (const x of texts) {
      const rows = events.filter((e) => e.text === x);
      assert.equal(rows.length, 1, `"${x}" stored ${rows.length} times`);
      assert.notEqual(rows[0]!.consumed_at, null);
    }
    const perNode = [0, 1, 2].map((n) => all.filter((b) => b.node === n).length);
    const summary = `${texts.length} wakes over 3 nodes → ${all.length} heartbeats (per node ${perNode.join('/')}), each event in exactly one, none overlapping`;
    t.diagnostic(summary);
    console.log(`cluster: ${summary}`);
    await done(c);
  });

  it('three nodes started together on an empty database all serve; the migrations ran once', {
    timeout: 120_000,
  }, async (t) => {
    for (let round = 0; round < 2; round++) {
      const c = await cluster({ nodes: 3 });
      for (const [n, hg] of c.nodes.entries()) {
        const r = await hg.post('/hooks/wake', { text: `serving ${round}.${n}`, mode: 'next-heartbeat' });
        assert.equal(r.status, 200, `node ${n}: ${r.text}`);
      }
      const versions = await c.db.query<{ version: number; n: string }>(
        'SELECT version, count(*) AS n FROM schema_migrations GROUP BY version ORDER BY version',
      );
      assert.ok(versions.length >= 1, 'no migration recorded');
      assert.deepEqual(
        versions.filter((v) => Number(v.n) !== 1),
        [],
      );
      assert.deepEqual(
        versions.map((v) => Number(v.version)),
        versions.map((_, i) => Number(versions[0]!.version) + i),
        'the migrations are not a gap-free sequence',
      );
      const events = await c.db.query<{ text: string }>(
        "SELECT text FROM system_events WHERE text LIKE 'serving %' ORDER BY text",
      );
      assert.deepEqual(
        events.map((e) => e.text),
        [0, 1, 2].map((n) => `serving ${round}.${n}`),
      );
      t.diagnostic(
        `round ${round}: 3 nodes up, migrations ${versions.map((v) => v.version).join(',')} each applied once`,
      );
      await done(c);
    }
  });

  it('the node registry lists the three live nodes (and `hookgate nodes` shows them, where the command exists)', {
    timeout: 120_000,
  }, async (t) => {
    const c = await cluster({ nodes: 3 });
    const rows = await waitFor(
      'three rows in nodes',
      async () => {
        const r = await c.db.query<{ id: string; pid: number; url: string }>('SELECT id, pid, url FROM nodes');
        return r.length === 3 ? r : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    assert.deepEqual(rows.map((r) => Number(r.pid)).sort(), c.nodes.map((hg) => hg.proc.pid).sort());
    const help = await runCli(['--help']);
    if (!/\bnodes\b/.test(help.stdout)) {
      t.diagnostic(`\`hookgate nodes\` is not in ${CLI} yet: that assertion is skipped`);
    } else {
      const out = await runCli(['nodes', '--json', '--config', c.nodes[0]!.configFile], { cwd: c.nodes[0]!.dir });
      assert.equal(out.code, 0, out.stderr);
      for (const hg of c.nodes)
        assert.ok(out.stdout.includes(String(hg.proc.pid)), `pid ${hg.proc.pid} not in:\n${out.stdout}`);
    }
    // A stopped node takes its row away.
    await c.nodes[2]!.stop();
    await waitFor('two rows in nodes', async () => (await c.db.query('SELECT id FROM nodes')).length === 2, {
      timeoutMs: 15_000,
    });
    await done(c);
  });
});
