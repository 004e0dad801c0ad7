/**
 * `hookgate status`: queue depths, the last heartbeat (derived from the main session's consumed events and turns),
 * failures in the last hour; --json for scripts; read from the store, never creating one.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { lastHeartbeatOf, type StatusView, statusText } from '../../src/cli/status-command.js';
import type { SessionDetail } from '../../src/store/types.js';
import { runCli } from '../support/server.js';
import { storeDirWith } from '../support/store-at.js';
import { removeDir, tempDir } from '../support/temp-dir.js';
import { command, delivery, event, received, run } from '../store/contract.js';

describe('cli: hookgate status', () => {
  let dir: string;
  const now = Date.now();
  before(async () => {
    dir = await storeDirWith(async (s) => {
      const ev = event({ text: 'consumed', createdAt: now - 60_000 });
      await s.accept(command({ events: [ev], runs: [run(), run()], received: received({ at: now }) }));
      await s.completeHeartbeat({
        heartbeatId: 'hb-1',
        sessionKey: 'main',
        eventIds: [ev.id],
        consumedAt: now - 30_000,
        deliveries: [delivery({ runId: null, heartbeatId: 'hb-1', createdAt: now - 30_000 })],
        messages: [],
      });
      await s.accept(command({ events: [event({ text: 'waiting' })], received: received({ at: now }) }));
      await s.recordReceived(received({ at: now - 1000, status: 401, code: 'unauthorized' }));
    });
  });
  after(() => removeDir(dir));

  it('--json: queues, last heartbeat, failures of the last hour', async () => {
    const r = await runCli(['status', '--json'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout) as StatusView;
    assert.deepEqual(s.queues, {
      runs: { queued: 2, running: 0 },
      outboxPending: 1,
      systemEventsPending: 1,
    });
    assert.equal(s.lastHeartbeatAt, now - 30_000);
    assert.deepEqual(s.failuresLastHour, { runsFailed: 0, deliveriesDead: 0, refused: 1 });
    assert.equal(s.nodes, undefined, 'SQLite: no node list (one node)');
  });

  it('one screen for people', async () => {
    const r = await runCli(['status'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^runs: +2 queued, 0 running$/m);
    assert.match(r.stdout, /^outbox: +1 pending$/m);
    assert.match(r.stdout, /^system events: 1 pending$/m);
    assert.match(r.stdout, /^heartbeat: +last \S+ \S+Z \(3\d s ago\)$/m);
    assert.match(r.stdout, /^last hour: +0 runs failed, 0 deliveries dead-lettered, 1 requests refused$/m);
  });

  it('never creates a store', async () => {
    const empty = tempDir();
    try {
      const r = await runCli(['status'], { cwd: empty });
      assert.equal(r.code, 1);
      assert.ok(!existsSync(join(empty, 'data')), 'created ./data');
    } finally {
      removeDir(empty);
    }
  });

  it('the last heartbeat: newest consumed event or turn outside a run; none seen → null', () => {
    const base = {
      key: 'main',
      agentId: 'main',
      pendingEvents: 0,
      runs: 0,
      lastActivityAt: 0,
      lastChannel: null,
      lastTo: null,
      lastAccountId: null,
      pending: [],
      recentRuns: [],
    };
    const ev = (consumedAt: number | null) => ({
      id: 'e',
      sessionKey: 'main',
      agentId: 'main',
      text: 't',
      origin: 'wake' as const,
      createdAt: 1,
      consumedAt,
      untrusted: false,
      source: null,
    });
    const turn = (createdAt: number, runId: string | null) => ({
      sessionKey: 'main',
      agentId: 'main',
      role: 'assistant' as const,
      content: 'x',
      runId,
      createdAt,
    });
    assert.equal(lastHeartbeatOf(undefined), null);
    assert.equal(lastHeartbeatOf({ ...base, recentEvents: [ev(null)], transcript: [] } as SessionDetail), null);
    assert.equal(
      lastHeartbeatOf({
        ...base,
        recentEvents: [ev(5), ev(9)],
        transcript: [turn(7, null), turn(50, 'run-1')],
      } as SessionDetail),
      9,
    );
    assert.equal(
      lastHeartbeatOf({ ...base, recentEvents: [ev(5)], transcript: [turn(12, null)] } as SessionDetail),
      12,
    );
  });

  it('statusText lists the nodes on a shared store', () => {
    const s: StatusView = {
      at: 10_000,
      queues: {
        runs: { queued: 0, running: 0 },
        outboxPending: 0,
        systemEventsPending: 0,
      },
      lastHeartbeatAt: null,
      failuresLastHour: { runsFailed: 0, deliveriesDead: 0, refused: 0 },
      nodes: [
        { id: 'a:1:x', host: 'a', pid: 1, version: '0', url: 'u', startedAt: 0, lastSeenAt: 9000, state: 'live' },
      ],
    };
    assert.match(statusText(s), /^heartbeat: +none seen$/m);
    assert.match(statusText(s), /^nodes: +1 live, 0 gone \(a:1:x\)$/m);
  });
});
