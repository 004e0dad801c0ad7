/** The `GmailStore` part of the store contract (called from contract.ts inside `storeContract`). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GmailPush, Store } from '../../src/store/types.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function push(over: Partial<GmailPush> = {}): GmailPush {
  return { messageId: 'm-1', account: 'alice@example.com', historyId: '1000', receivedAt: T0, ...over };
}

export function gmailContract(store: () => Store): void {
  describe('gmail (GmailStore)', () => {
    it('an unknown account has no status', async () => {
      assert.equal(await store().readGmailStatus('nobody@example.com'), undefined);
    });

    it('records a push durably; the same Pub/Sub message id again is a duplicate', async () => {
      assert.deepEqual(await store().recordGmailPush(push()), { duplicate: false });
      assert.deepEqual(await store().recordGmailPush(push({ receivedAt: T0 + 5 })), { duplicate: true });
      assert.deepEqual(
        await store().recordGmailPush(push({ messageId: 'm-2', historyId: '1001', receivedAt: T0 + 6 })),
        { duplicate: false },
      );
      const pending = await store().pendingGmailPushes('alice@example.com');
      assert.deepEqual(pending, [push(), push({ messageId: 'm-2', historyId: '1001', receivedAt: T0 + 6 })]);
      assert.deepEqual(await store().pendingGmailPushes(), pending);
      assert.deepEqual(await store().pendingGmailPushes('bob@example.com'), []);
      const s = await store().readGmailStatus('alice@example.com');
      assert.ok(s);
      assert.equal(s.lastPushAt, T0 + 6);
      assert.equal(s.pendingPushes, 2);
      assert.equal(s.historyId, null);
      assert.equal(s.messagesFetched, 0);
    });

    it('a watch sets the expiry and the first history id only', async () => {
      await store().recordGmailWatch({ account: 'a@x', expiration: T0 + 7 * 86_400_000, historyId: '500', now: T0 });
      await store().recordGmailWatch({
        account: 'a@x',
        expiration: T0 + 8 * 86_400_000,
        historyId: '900',
        now: T0 + 1,
      });
      const s = await store().readGmailStatus('a@x');
      assert.ok(s);
      assert.equal(s.historyId, '500');
      assert.equal(s.watchExpiration, T0 + 8 * 86_400_000);
      assert.equal(s.watchRenewedAt, T0 + 1);
    });

    it('a completed fetch marks its pushes, counts messages, moves the history id forward only, clears the error', async () => {
      await store().recordGmailPush(push({ messageId: 'p1' }));
      await store().recordGmailPush(push({ messageId: 'p2' }));
      await store().recordGmailError('alice@example.com', 'gmail api 500', T0 + 1);
      assert.equal((await store().readGmailStatus('alice@example.com'))?.lastError, 'gmail api 500');
      await store().completeGmailFetch({
        account: 'alice@example.com',
        pushIds: ['p1'],
        historyId: '999',
        messages: 2,
        now: T0 + 2,
      });
      let s = await store().readGmailStatus('alice@example.com');
      assert.ok(s);
      assert.equal(s.historyId, '999');
      assert.equal(s.messagesFetched, 2);
      assert.equal(s.lastError, null);
      assert.equal(s.lastErrorAt, null);
      assert.equal(s.pendingPushes, 1);
      assert.deepEqual(
        (await store().pendingGmailPushes('alice@example.com')).map((p) => p.messageId),
        ['p2'],
      );
      // '1000' > '999' numerically (longer), '998' < '999': never backwards.
      await store().completeGmailFetch({
        account: 'alice@example.com',
        pushIds: ['p2'],
        historyId: '1000',
        messages: 1,
        now: T0 + 3,
      });
      await store().completeGmailFetch({
        account: 'alice@example.com',
        pushIds: [],
        historyId: '998',
        messages: 0,
        now: T0 + 4,
      });
      await store().completeGmailFetch({
        account: 'alice@example.com',
        pushIds: [],
        historyId: null,
        messages: 0,
        now: T0 + 5,
      });
      s = await store().readGmailStatus('alice@example.com');
      assert.equal(s?.historyId, '1000');
      assert.equal(s?.messagesFetched, 3);
      assert.equal(s?.pendingPushes, 0);
      // A redelivery of a fetched push is still a duplicate.
      assert.deepEqual(await store().recordGmailPush(push({ messageId: 'p1' })), { duplicate: true });
    });

    it('prune deletes fetched pushes older than the received retention, keeps unfetched ones', async () => {
      await store().recordGmailPush(push({ messageId: 'old-fetched' }));
      await store().recordGmailPush(push({ messageId: 'old-pending' }));
      await store().completeGmailFetch({
        account: 'alice@example.com',
        pushIds: ['old-fetched'],
        historyId: null,
        messages: 0,
        now: T0 + 1,
      });
      await store().prune(T0 + 100, T0 + 50);
      assert.deepEqual(await store().recordGmailPush(push({ messageId: 'old-fetched', receivedAt: T0 + 200 })), {
        duplicate: false,
      });
      assert.deepEqual(await store().recordGmailPush(push({ messageId: 'old-pending', receivedAt: T0 + 200 })), {
        duplicate: true,
      });
    });
  });
}
