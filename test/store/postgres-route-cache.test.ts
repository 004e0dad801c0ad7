/** The PostgreSQL driver's route cache (src/store/postgres-route-cache.ts), without a database: when a read is kept. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PgRouteCache, ROUTE_KEEP_MS } from '../../src/store/postgres-route-cache.js';
import type { SessionRoute } from '../../src/store/types.js';

/** A store of routes that counts its reads; `hold` makes the next read wait until `release`. */
function fakeStore() {
  const routes = new Map<string, SessionRoute>();
  let reads = 0;
  let gate: Promise<void> | undefined;
  let open = () => {};
  return {
    routes,
    get reads() {
      return reads;
    },
    hold() {
      gate = new Promise((r) => (open = r));
    },
    release() {
      gate = undefined;
      open();
    },
    read: async (key: string) => {
      reads++;
      const value = routes.get(key); // read before the wait: what the statement's snapshot saw
      if (gate) await gate;
      return value;
    },
  };
}

describe('PgRouteCache', () => {
  it('keeps what it read while listening (a missing route too), and reads again once told the key changed', async () => {
    const db = fakeStore();
    const cache = new PgRouteCache();
    cache.setListening(true);
    assert.equal(await cache.get('main', db.read), undefined);
    assert.equal(await cache.get('main', db.read), undefined);
    assert.equal(db.reads, 1, 'no route is kept as such');
    db.routes.set('main', { channel: 'telegram', to: '1001', accountId: null });
    cache.forget('other');
    assert.equal(await cache.get('main', db.read), undefined, 'another key forgotten: this one is kept');
    cache.forget('main');
    assert.deepEqual(await cache.get('main', db.read), { channel: 'telegram', to: '1001', accountId: null });
    assert.deepEqual(await cache.get('main', db.read), { channel: 'telegram', to: '1001', accountId: null });
    assert.equal(db.reads, 2);
    cache.forget();
    await cache.get('main', db.read);
    assert.equal(db.reads, 3, 'forget() without a key forgets every route');
  });

  it('keeps nothing while not listening, and forgets everything when the connection is lost', async () => {
    const db = fakeStore();
    const cache = new PgRouteCache();
    await cache.get('main', db.read);
    await cache.get('main', db.read);
    assert.equal(db.reads, 2, 'not listening: every call reads');
    cache.setListening(true);
    await cache.get('main', db.read);
    await cache.get('main', db.read);
    assert.equal(db.reads, 3);
    cache.setListening(false);
    db.routes.set('main', { channel: 'slack', to: 'C1', accountId: null });
    assert.equal((await cache.get('main', db.read))?.channel, 'slack');
    assert.equal(db.reads, 4);
  });

  it('a read under way when the route changed is answered but not kept (it may predate the change)', async () => {
    const db = fakeStore();
    const cache = new PgRouteCache();
    cache.setListening(true);
    db.hold();
    const pending = cache.get('main', db.read); // its snapshot: no route
    db.routes.set('main', { channel: 'telegram', to: '1001', accountId: null });
    cache.forget('main'); // the notice of that change arrives before the read's answer
    db.release();
    assert.equal(await pending, undefined);
    assert.equal((await cache.get('main', db.read))?.to, '1001', 'read again, not the stale answer');
    assert.equal(db.reads, 2);
  });

  it('reads a kept route again after ROUTE_KEEP_MS, notice or not', async () => {
    const db = fakeStore();
    let now = 0;
    const cache = new PgRouteCache(() => now);
    cache.setListening(true);
    await cache.get('main', db.read);
    now += ROUTE_KEEP_MS - 1;
    await cache.get('main', db.read);
    assert.equal(db.reads, 1);
    now += 1;
    await cache.get('main', db.read);
    assert.equal(db.reads, 2);
  });
});
