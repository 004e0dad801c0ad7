import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Audit, AUDIT_MAX_QUEUED } from '../src/audit.js';
import { StoreError } from '../src/errors.js';
import type { AuditEntry } from '../src/store/audit-types.js';
import { captureLogger } from './support/log-capture.js';
import { waitFor } from './support/wait.js';

/** A store whose appends fail while `down` is true. */
function fakeStore() {
  const stored = new Map<string, AuditEntry>();
  const s = {
    down: false,
    calls: 0,
    stored,
    async appendAudit(entries: AuditEntry[]) {
      s.calls++;
      if (s.down) throw new StoreError('store down');
      for (const e of entries) stored.set(e.id, e);
    },
  };
  return s;
}

describe('Audit recorder', () => {
  it('logs one info line with event "audit" and stores the record, secrets masked in both', async () => {
    const { lines, logger } = captureLogger();
    const store = fakeStore();
    const audit = new Audit({ logger, store, node: 'n1' });
    const e = audit.record('admin.retry', 'admin', { runId: 'r1', botToken: 'leaked-token-value' });
    await audit.flush();
    const line = lines.find((l) => l.event === 'audit');
    assert.ok(line);
    assert.equal(line.level, 30);
    assert.equal(line.kind, 'admin.retry');
    assert.equal(line.actor, 'admin');
    assert.deepEqual(line.detail, { runId: 'r1', botToken: '***' });
    assert.deepEqual(store.stored.get(e.id), { ...e, node: 'n1' });
    assert.equal(JSON.stringify([...lines, ...store.stored.values()]).includes('leaked-token-value'), false);
  });

  it('a reload records the changes and one token.rotated per token list that changed', async () => {
    const { logger } = captureLogger();
    const store = fakeStore();
    const audit = new Audit({ logger, store, node: null });
    audit.configReloaded(
      { hooks: { tokens: [{ id: 'a', token: 'x-secret-1' }] } },
      { hooks: { tokens: [{ id: 'b', token: 'x-secret-2' }] } },
      2,
    );
    await audit.flush();
    const kinds = [...store.stored.values()].map((e) => e.kind);
    assert.deepEqual(kinds, ['config.reload', 'token.rotated']);
    assert.equal(JSON.stringify([...store.stored.values()]).includes('x-secret'), false);
  });

  it('while the store refuses: never throws, keeps at most maxQueued (oldest dropped, one warning), stores the rest when it is back', async () => {
    const { lines, logger } = captureLogger();
    const store = fakeStore();
    store.down = true;
    const audit = new Audit({ logger, store, node: null, maxQueued: 5 });
    const ids = Array.from({ length: 12 }, (_, i) => audit.record('lockout', `10.0.0.${i}`, { failures: 20 }).id);
    assert.equal(lines.filter((l) => String(l.msg).startsWith('audit records dropped')).length, 1);
    await waitFor('the retry warning', () =>
      lines.some((l) => String(l.msg).startsWith('audit records not stored yet')),
    );
    store.down = false;
    await audit.flush();
    assert.deepEqual([...store.stored.keys()].sort(), ids.slice(7).sort(), 'the newest 5 are stored');
    await waitFor('the recovery line', () =>
      lines.some((l) => l.msg === 'audit records are stored again' && l.dropped === 7),
    );
  });

  it(`by default at most ${AUDIT_MAX_QUEUED} (1000) records wait for a refusing store`, async () => {
    const { logger } = captureLogger();
    const store = fakeStore();
    store.down = true;
    const audit = new Audit({ logger, store, node: null });
    for (let i = 0; i < 1005; i++) audit.record('lockout', 'x', {});
    store.down = false;
    await audit.flush();
    assert.equal(store.stored.size, 1000);
    assert.equal(AUDIT_MAX_QUEUED, 1000);
  });
});
