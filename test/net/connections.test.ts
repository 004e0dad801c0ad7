import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { ClientIpResolver } from '../../src/net/client-ip.js';
import { ConnectionGuard } from '../../src/net/connections.js';

/** What the guard reads of a socket: its address, whether a request is being answered on it, whether it was answered. */
class FakeSocket extends EventEmitter {
  destroyed = false;
  bytesWritten = 0;
  writableLength = 0;
  _httpMessage: object | null = null;
  constructor(readonly remoteAddress: string) {
    super();
  }
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    process.nextTick(() => this.emit('close'));
  }
  busy(): this {
    this._httpMessage = {};
    return this;
  }
}

function setup(maxConnections: number, maxConnectionsPerAddress: number, trustedProxies: string[] = []) {
  const guard = new ConnectionGuard(
    'hooks',
    { maxConnections, maxConnectionsPerAddress },
    new ClientIpResolver(trustedProxies),
  );
  const all: FakeSocket[] = [];
  const connect = (ip: string, busy = false) => {
    const s = new FakeSocket(ip);
    all.push(s);
    const admitted = guard.admit(s as unknown as Socket);
    if (busy && admitted) s.busy();
    return { socket: s, admitted };
  };
  const openOf = (ip: string) => all.filter((s) => s.remoteAddress === ip && !s.destroyed).length;
  return { guard, connect, openOf, all };
}

describe('ConnectionGuard', () => {
  it('an address at its cap replaces its own oldest idle connection, never a busy one; all busy → refused', () => {
    const { guard, connect, openOf } = setup(100, 3);
    const busy = connect('203.0.113.1', true).socket;
    const idle1 = connect('203.0.113.1').socket;
    const idle2 = connect('203.0.113.1').socket;
    idle2.bytesWritten = 100; // answered once: a keep-alive connection between requests
    assert.equal(connect('203.0.113.1').admitted, true);
    assert.ok(idle1.destroyed && !busy.destroyed && !idle2.destroyed, 'the oldest idle one gave way');
    assert.equal(openOf('203.0.113.1'), 3);
    // idle2 goes next, then the fourth: every connection of the address is busy.
    connect('203.0.113.1', true);
    assert.ok(idle2.destroyed);
    connect('203.0.113.1', true);
    const before = guard.counts.refusedPerAddress;
    assert.equal(connect('203.0.113.1').admitted, false);
    assert.equal(guard.counts.refusedPerAddress, before + 1);
    assert.deepEqual(
      { evictedIdle: guard.counts.evictedIdle > 0, evictedUnfinished: guard.counts.evictedUnfinished > 0 },
      { evictedIdle: true, evictedUnfinished: true },
    );
  });

  it('12 addresses × 50 idle connections (512 / 64): a fresh address is admitted five times out of five', () => {
    const { guard, connect } = setup(512, 64);
    for (let a = 10; a < 22; a++) for (let i = 0; i < 50; i++) connect(`127.0.0.${a}`);
    assert.ok(guard.size <= 512);
    for (let i = 0; i < 5; i++) assert.equal(connect('127.0.0.50').admitted, true, `attempt ${i + 1}`);
  });

  it('20 addresses each reconnecting to hold their share, every connection busy: fresh addresses still get in', () => {
    const { guard, connect, openOf } = setup(512, 64);
    // Each flooding address keeps asking until refused, twice over (it reconnects), with requests in progress on all.
    for (let round = 0; round < 2; round++)
      for (let a = 10; a < 30; a++) for (let i = 0; i < 64; i++) connect(`127.0.0.${a}`, true);
    const held = guard.size;
    assert.ok(held < 512, `the flood holds ${held} of 512`);
    assert.ok(Math.max(...Array.from({ length: 20 }, (_, i) => openOf(`127.0.0.${10 + i}`))) <= 64);
    for (let f = 50; f < 55; f++)
      assert.equal(connect(`127.0.0.${f}`, true).admitted, true, `fresh address 127.0.0.${f}`);
    assert.equal(guard.counts.evictedIdle + guard.counts.evictedUnfinished, 0, 'nothing busy was closed');
  });

  it('at the total cap the address holding the most gives way; a newcomer at its share takes from nobody', () => {
    const { guard, connect } = setup(4, 4);
    const a = [connect('198.51.100.1').socket, connect('198.51.100.1').socket];
    const b = connect('198.51.100.2').socket;
    const c = connect('198.51.100.3').socket;
    assert.equal(guard.size, 4);
    // A fresh address: the largest holder (.1) loses its oldest idle connection.
    assert.equal(connect('198.51.100.4').admitted, true);
    assert.ok(a[0]!.destroyed && !a[1]!.destroyed && !b.destroyed && !c.destroyed);
    // Its one connection busy, .4 is at its share (4 / 5 addresses): a second one is refused, nobody else's closed.
    assert.equal(guard.counts.refusedPerAddress, 0);
    const all = [a[1]!, b, c];
    assert.equal(connect('198.51.100.4').admitted, true, 'it may replace its own idle one');
    assert.equal(connect('198.51.100.4', true).admitted, true);
    assert.equal(connect('198.51.100.4').admitted, false);
    assert.ok(all.every((s) => !s.destroyed));
    assert.equal(guard.counts.refusedPerAddress, 1);
  });

  it('trusted proxies are exempt from the per-address caps; the total cap still bounds them', () => {
    const { guard, connect } = setup(20, 2, ['10.0.0.1']);
    for (let i = 0; i < 15; i++) assert.equal(connect('10.0.0.1').admitted, true);
    assert.equal(connect('10.0.0.2').admitted, true);
    // Past the reserved last share, the second connection of an address takes the largest holder's idle one.
    assert.equal(connect('10.0.0.2').admitted, true);
    assert.equal(guard.size, 16);
    assert.equal(guard.counts.evictedUnfinished, 1);
    for (let i = 0; i < 10; i++) assert.equal(connect('10.0.0.1', true).admitted, true);
    assert.equal(guard.size, 20);
  });

  it('the idle connection unused the longest gives way, not the one whose answer was just written', () => {
    // Three keep-alive connections of one client at its cap. The first was admitted first but its request was held
    // (a slow store) and answered only now: its client is about to send its next request on it. The others were
    // answered earlier and have been idle since. A new connection must take one of those, else that next request is
    // reset.
    const { guard, connect } = setup(100, 3);
    const held = connect('203.0.113.9', true).socket;
    const idleA = connect('203.0.113.9').socket;
    const idleB = connect('203.0.113.9').socket;
    for (const s of [idleA, idleB]) {
      s.bytesWritten = 100;
      guard.answered(s as unknown as Socket);
    }
    held._httpMessage = null;
    held.bytesWritten = 100;
    guard.answered(held as unknown as Socket);
    assert.equal(connect('203.0.113.9').admitted, true);
    assert.ok(idleA.destroyed && !idleB.destroyed && !held.destroyed, 'the one idle the longest gave way');
    assert.equal(connect('203.0.113.9').admitted, true);
    assert.ok(idleB.destroyed && !held.destroyed);
    // The same at the total cap, across addresses: the largest holder gives up its longest-idle connection.
    const total = setup(4, 4);
    const a1 = total.connect('198.51.100.1', true).socket;
    const a2 = total.connect('198.51.100.1').socket;
    total.connect('198.51.100.2');
    total.connect('198.51.100.3');
    a2.bytesWritten = 100;
    total.guard.answered(a2 as unknown as Socket);
    a1._httpMessage = null;
    a1.bytesWritten = 100;
    total.guard.answered(a1 as unknown as Socket);
    assert.equal(total.connect('198.51.100.4').admitted, true);
    assert.ok(a2.destroyed && !a1.destroyed);
    // A socket already closed (or never counted) is ignored.
    guard.answered(idleA as unknown as Socket);
    assert.equal(guard.size, 3);
  });

  it('IPv6 clients count by their /64; closed sockets are uncounted', async () => {
    const { guard, connect, all } = setup(100, 2);
    assert.equal(connect('2001:db8::1').admitted, true);
    assert.equal(connect('2001:db8::2').admitted, true);
    connect('2001:db8::3'); // replaces the oldest of the /64
    assert.equal(guard.addresses, 1);
    assert.equal(guard.size, 2);
    for (const s of all) s.destroy();
    await new Promise((r) => setImmediate(r));
    assert.equal(guard.size, 0);
    assert.equal(guard.addresses, 0);
  });
});
