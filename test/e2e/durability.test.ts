/**
 * "Nothing accepted is ever lost": kill -9 the server in the middle of a burst; every request that was answered
 * 2xx must be in the store after the crash, with the ids it was answered with.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { storedEvents } from '../support/db.js';
import { startHookgate } from '../support/server.js';
import { openServerStore } from '../support/runtime-kit.js';

describe('durability', () => {
  it('kill -9 during a burst loses no accepted wake or agent run', async () => {
    const hg = await startHookgate({ config: { logging: { level: 'info' } } });
    try {
      const accepted: Array<{ kind: 'wake' | 'agent'; id: string; text: string }> = [];
      let answered = 0;
      let refused = 0;
      const total = 1200;
      const concurrency = 40;
      let next = 0;
      let killed: Promise<void> | undefined;
      const worker = async () => {
        while (next < total) {
          const i = next++;
          const kind = i % 3 === 0 ? 'agent' : 'wake';
          const text = `burst ${i}`;
          try {
            const r = await hg.post(
              `/hooks/${kind}`,
              kind === 'wake' ? { text, mode: 'next-heartbeat' } : { message: text },
            );
            answered++;
            if (r.status === 200)
              accepted.push({ kind, id: String(kind === 'wake' ? r.body?.eventId : r.body?.runId), text });
            else refused++;
          } catch {
            // the connection died with the process: never answered, so never promised
          }
          if (answered === 600 && !killed) killed = hg.kill9();
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      await killed;
      assert.equal(refused, 0);
      assert.ok(accepted.length >= 600, `accepted ${accepted.length}`);

      const store = openServerStore(hg);
      try {
        const runs = new Map((await store.listRuns({ limit: 10_000 })).map((r) => [r.id, r]));
        // Pending or already fed to a heartbeat: either way it must be there.
        const events = storedEvents(join(hg.dir, 'data/hookgate.db'));
        const lost = accepted.filter((a) =>
          a.kind === 'agent' ? runs.get(a.id)?.message !== a.text : events.get(a.id)?.text !== a.text,
        );
        assert.deepEqual(lost, [], `${lost.length} of ${accepted.length} accepted requests lost`);
        // The runtime may have started or finished some before the kill; none may be missing or failed.
        for (const a of accepted)
          if (a.kind === 'agent') assert.ok(['queued', 'running', 'succeeded'].includes(runs.get(a.id)!.state));
      } finally {
        await store.close();
      }

      // And the service starts again on the same store and keeps accepting.
      await hg.restart();
      const r = await hg.post('/hooks/wake', { text: 'after the crash' });
      assert.equal(r.status, 200);
    } finally {
      await hg.cleanup();
    }
  });
});
