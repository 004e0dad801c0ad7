/** The `AuditStore` part of the store contract (called from contract.ts inside `storeContract`). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HookgateError } from '../../src/errors.js';
import type { AuditEntry, Store } from '../../src/store/types.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
let n = 0;

function entry(over: Partial<AuditEntry> = {}): AuditEntry {
  n++;
  return {
    id: `audit-${n}`,
    at: T0 + n,
    kind: 'admin.retry',
    actor: 'admin',
    node: 'node-a',
    detail: { runId: `r${n}` },
    ...over,
  };
}

export function auditContract(store: () => Store): void {
  describe('audit (AuditStore)', () => {
    it('appends records and pages them newest first, every field kept (detail as JSON)', async () => {
      const a = entry({
        detail: { changes: [{ path: 'hooks.token', op: 'changed', from: '***', to: '***' }], generation: 2 },
        kind: 'config.reload',
        actor: 'config',
      });
      const b = entry({ node: null, actor: 'cli' });
      const c = entry({
        kind: 'lockout',
        actor: '203.0.113.7',
        detail: { failures: 20, lockoutSeconds: 300, until: T0 + 300_000 },
      });
      await store().appendAudit([a, b]);
      await store().appendAudit([c]);
      const page = await store().pageAudit({ limit: 10 });
      assert.deepEqual(page, { items: [c, b, a], nextCursor: null });
    });

    it('an id already stored is skipped (a recorder may append a batch again)', async () => {
      const a = entry();
      await store().appendAudit([a]);
      await store().appendAudit([a, entry({ id: a.id, actor: 'other' })]);
      await store().appendAudit([]);
      assert.deepEqual((await store().pageAudit({ limit: 10 })).items, [a]);
    });

    it('cursor pages: no record lost or repeated; filtered by kind and since', async () => {
      const all = Array.from({ length: 7 }, (_, i) =>
        entry({ kind: i % 2 ? 'lockout' : 'admin.retry', at: T0 + i * 1000 }),
      );
      await store().appendAudit(all);
      const seen: AuditEntry[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const p = await store().pageAudit({ limit: 3, ...(cursor ? { cursor } : {}) });
        seen.push(...p.items);
        if (!p.nextCursor) break;
        cursor = p.nextCursor;
      }
      assert.deepEqual(seen, [...all].reverse());
      const lockouts = await store().pageAudit({ limit: 10, kind: 'lockout' });
      assert.deepEqual(
        lockouts.items.map((e) => e.id),
        all
          .filter((e) => e.kind === 'lockout')
          .reverse()
          .map((e) => e.id),
      );
      const recent = await store().pageAudit({ limit: 10, since: T0 + 4000 });
      assert.deepEqual(
        recent.items.map((e) => e.id),
        all
          .slice(4)
          .reverse()
          .map((e) => e.id),
      );
      const both = await store().pageAudit({ limit: 1, kind: 'admin.retry', since: T0 + 2000 });
      assert.deepEqual(
        both.items.map((e) => e.id),
        [all[6]!.id],
      );
      const next = await store().pageAudit({
        limit: 5,
        kind: 'admin.retry',
        since: T0 + 2000,
        cursor: both.nextCursor!,
      });
      assert.deepEqual(next, { items: [all[4]!, all[2]!], nextCursor: null });
    });

    it("another list's cursor is invalid_query", async () => {
      await store().appendAudit([entry(), entry()]);
      const cursor = (await store().pageAudit({ limit: 1 })).nextCursor!;
      await assert.rejects(
        store().pageAudit({ limit: 1, cursor: 'garbage!' }),
        (e: unknown) => e instanceof HookgateError && e.code === 'invalid_query',
      );
      await assert.rejects(
        store().pageRuns({ limit: 1, cursor }),
        (e: unknown) => e instanceof HookgateError && e.code === 'invalid_query',
      );
    });

    it('pruneAudit deletes records older than the cut-off only, and says how many', async () => {
      const old = entry({ at: T0 - 100 * 86_400_000 });
      const kept = entry({ at: T0 });
      await store().appendAudit([old, kept]);
      assert.equal(await store().pruneAudit(T0 - 90 * 86_400_000), 1);
      assert.deepEqual((await store().pageAudit({ limit: 10 })).items, [kept]);
    });
  });
}
