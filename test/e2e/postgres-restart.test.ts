/**
 * PostgreSQL restarted under load. Two real hookgate nodes on a PostgreSQL server of this test's own
 * (test/support/private-postgres.ts: initdb into a temp dir; the machine's shared server is never touched) take
 * agent runs and wakes from concurrent senders while the server is restarted (`pg_ctl restart -m fast`, then a
 * stop / pause / start). What must hold: every request answered 2xx is in the database afterwards and is worked
 * (each run delivered, under one webhook id); the answers during the outage are 503 (or the request waits and
 * succeeds), never another error; both nodes come back by themselves, no restart of theirs, and serve again.
 * Skips without initdb (fails under HOOKGATE_REQUIRE_SERVICES=1). Run `npm run build` first when running it alone.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { type Cluster, startCluster } from '../support/cluster.js';
import { createTestDatabase, servicesRequired } from '../support/pg-database.js';
import { type PrivatePostgres, privatePostgresUnavailable, startPrivatePostgres } from '../support/private-postgres.js';
import { webhookDeliveries } from '../support/runtime-kit.js';
import { delay } from '../support/scripted-model.js';
import { waitFor } from '../support/wait.js';

const unavailable = await privatePostgresUnavailable();
if (unavailable && servicesRequired()) throw new Error(`HOOKGATE_REQUIRE_SERVICES=1 and ${unavailable}`);

let server: PrivatePostgres | undefined;
let cluster: Cluster | undefined;
after(async () => {
  await cluster?.cleanup().catch(() => undefined);
  await server?.cleanup();
});

interface Sent {
  kind: 'agent' | 'wake';
  tag: string;
  id: string;
}

describe('PostgreSQL restarted under load', { skip: unavailable ?? false, timeout: 300_000 }, () => {
  it('every 2xx-accepted request survives and is worked; 503s during the outage; the nodes recover by themselves', async (t) => {
    server = await startPrivatePostgres();
    const db = await createTestDatabase(server.url);
    cluster = await startCluster({
      nodes: 2,
      database: db,
      model: (call) => (call.heartbeat ? 'HEARTBEAT_OK' : `done: ${/pgr-\d+/.exec(call.lastUser)?.[0] ?? '?'}`),
    });
    const c = cluster;

    const accepted: Sent[] = [];
    const statuses = new Map<string, number>();
    const note = (k: string) => statuses.set(k, (statuses.get(k) ?? 0) + 1);
    let stopLoad = false;
    let seq = 0;
    let outageStart = 0;
    let outageEnd = 0;
    const okAfter = [0, 0]; // 200s per node after the server was back
    const sender = async () => {
      while (!stopLoad) {
        const i = seq++;
        const tag = `pgr-${i}`;
        const kind = i % 3 === 2 ? 'wake' : 'agent';
        const body =
          kind === 'agent'
            ? { message: `${tag}: summarise`, name: tag, channel: 'webhook', to: 'ops', wakeMode: 'next-heartbeat' }
            : { text: `${tag} wake`, mode: 'next-heartbeat' };
        try {
          const { node, result } = await c.post(`/hooks/${kind}`, body);
          note(String(result.status));
          if (result.status === 200) {
            accepted.push({ kind, tag, id: String(kind === 'agent' ? result.body?.runId : result.body?.eventId) });
            if (outageEnd) okAfter[node]!++;
          }
        } catch (err) {
          note(`connection error: ${(err as Error).message}`);
        }
        await delay(5);
      }
    };
    const senders = Array.from({ length: 6 }, sender);
    // The senders stop whatever happens: a failed wait below must not leave them looping (the file would never end).
    t.after(() => {
      stopLoad = true;
    });

    await waitFor('some load accepted before the restart', () => accepted.length >= 100, 30_000);
    const before = accepted.length;
    // 1. A fast restart: every connection is cut, the server is back at once.
    outageStart = Date.now();
    await server.restart('fast');
    const afterRestart = accepted.length;
    await delay(2000);
    // 2. A real outage: stopped for 3 s under load, then started again.
    await server.stop('fast');
    const stoppedAt = accepted.length;
    await delay(3000);
    const duringStop = accepted.length - stoppedAt;
    await server.start();
    outageEnd = Date.now();
    const recovered = await waitFor(
      '10 answers 200 from each node after the server came back',
      () => (okAfter.every((n) => n >= 10) ? Date.now() : undefined),
      {
        timeoutMs: 60_000,
        intervalMs: 50,
      },
    ).catch(async (err: Error) => {
      // Say what each node was doing: the answers so far, each node's last log lines, the server's log.
      const tails = c.nodes
        .map((n, i) => `node ${i} (${okAfter[i]} 200s after the start):\n${n.lines.slice(-60).join('\n')}`)
        .join('\n');
      throw new Error(
        `${err.message}\nanswers ${JSON.stringify(Object.fromEntries(statuses))}\n${tails}\nPostgreSQL:\n${(await server!.log()).split('\n').slice(-15).join('\n')}`,
      );
    });
    await delay(1000);
    stopLoad = true;
    await Promise.all(senders);

    for (const n of [0, 1]) assert.ok(c.up(n), `node ${n} exited: ${c.nodes[n]!.lines.slice(-20).join('\n')}`);
    // Both nodes serve again, each on its own (no restart of theirs).
    for (const [n, hg] of c.nodes.entries()) {
      const r = await waitFor(
        `node ${n} answering 200`,
        async () => {
          const x = await hg.post('/hooks/wake', { text: `after the outage ${n}`, mode: 'next-heartbeat' });
          return x.status === 200 ? x : undefined;
        },
        30_000,
      );
      assert.equal(r.status, 200);
    }
    const other = [...statuses].filter(([k]) => k !== '200' && k !== '503');
    assert.deepEqual(other, [], `answers other than 200 and 503: ${JSON.stringify(Object.fromEntries(statuses))}`);

    // Every 2xx is in the database.
    const runIds = accepted.filter((a) => a.kind === 'agent').map((a) => a.id);
    const eventIds = accepted.filter((a) => a.kind === 'wake').map((a) => a.id);
    const runs = new Map(
      (await db.query<{ id: string; message: string }>('SELECT id, message FROM runs')).map((r) => [r.id, r.message]),
    );
    const events = new Map(
      (await db.query<{ id: string; text: string }>('SELECT id, text FROM system_events')).map((r) => [r.id, r.text]),
    );
    const lost = accepted.filter((a) =>
      a.kind === 'agent' ? runs.get(a.id) !== `${a.tag}: summarise` : events.get(a.id) !== `${a.tag} wake`,
    );
    assert.deepEqual(
      lost.map((l) => l.tag),
      [],
      `${lost.length} of ${accepted.length} accepted requests are not in the database`,
    );

    // Every accepted run is worked: delivered, under one webhook id.
    await waitFor(
      `a delivery of each of the ${runIds.length} accepted runs`,
      () => {
        const got = new Set(webhookDeliveries(c.receiver).map((d) => String(d.body.runId)));
        const missing = runIds.filter((id) => !got.has(id));
        return missing.length === 0 ? true : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    const ids = new Map<string, Set<string>>();
    for (const d of webhookDeliveries(c.receiver)) {
      const id = String(d.body.runId);
      if (!ids.has(id)) ids.set(id, new Set());
      ids.get(id)!.add(d.id);
    }
    for (const id of runIds)
      assert.equal(ids.get(id)!.size, 1, `run ${id} delivered under ${ids.get(id)!.size} webhook ids`);
    const states = await db.query<{ state: string; n: string }>('SELECT state, count(*) AS n FROM runs GROUP BY state');
    assert.deepEqual(
      states.map((s) => s.state),
      ['succeeded'],
      JSON.stringify(states),
    );

    const summary =
      `${seq} requests: ${accepted.length} accepted (${before} before the restart, ${afterRestart - before} during the fast restart, ${duringStop} while stopped), ` +
      `answers ${JSON.stringify(Object.fromEntries(statuses))}; 200s again ${((recovered - outageEnd) / 1000).toFixed(1)} s after the start ` +
      `(${((outageEnd - outageStart) / 1000).toFixed(1)} s of restarts and outage); ${runIds.length} runs all delivered once, ${eventIds.length} wakes all stored`;
    t.diagnostic(summary);
    console.log(`postgres-restart: ${summary}`);
  });
});
