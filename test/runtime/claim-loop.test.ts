import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { performance } from 'node:perf_hooks';
import { ClaimLoop, type ClaimLoopOptions } from '../../src/runtime/claim-loop.js';

// Longer than production's gap (25 ms), so that the waits of a busy CI machine cannot pass it unnoticed.
const YIELD_GAP_MS = 200;
const YIELD_CLAIM = 8;
const yieldTo = { gapMs: YIELD_GAP_MS, items: YIELD_CLAIM };
import { waitFor } from '../support/runtime-kit.js';
import { gate } from '../support/scripted-model.js';
import { startRuntimeKit } from './kit.js';

interface Item {
  id: string;
}

/**
 * A queue the loop claims from, work that waits for the test to finish each item, and a record of every claim
 * (how many were asked for, and how many claims ran at once).
 */
function harness(over: Partial<ClaimLoopOptions<Item>> & { limit?: () => number } = {}) {
  const queue: Item[] = [];
  const claims: number[] = [];
  const started: string[] = [];
  const aborted: string[] = [];
  const finish = new Map<string, () => void>();
  let claiming = 0;
  let maxClaiming = 0;
  let inWork = 0;
  let maxInWork = 0;
  const logs: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const push = (obj: Record<string, unknown>, msg: string) => logs.push({ obj, msg });
  const logger = { error: push, warn: push, info: push } as unknown as ClaimLoopOptions<Item>['logger'];
  const loop = new ClaimLoop<Item>({
    label: 'items',
    logger,
    limit: () => 2,
    pollMs: 60_000,
    async claim(n) {
      claims.push(n);
      claiming++;
      maxClaiming = Math.max(maxClaiming, claiming);
      const taken = queue.splice(0, n); // what the store had when asked; the answer arrives a turn later
      await new Promise((r) => setImmediate(r));
      claiming--;
      return taken;
    },
    async work(item, signal) {
      started.push(item.id);
      inWork++;
      maxInWork = Math.max(maxInWork, inWork);
      try {
        const done = gate();
        finish.set(item.id, done.open);
        signal.onAbort(() => {
          aborted.push(item.id);
          done.open();
        });
        await done.wait;
      } finally {
        inWork--;
      }
    },
    ...over,
  });
  const add = (...ids: string[]) => queue.push(...ids.map((id) => ({ id })));
  const done = (id: string) => {
    const f = finish.get(id);
    assert.ok(f, `${id} is not in work`);
    f();
  };
  return {
    loop,
    queue,
    claims,
    started,
    aborted,
    logs,
    add,
    done,
    get maxClaiming() {
      return maxClaiming;
    },
    get maxInWork() {
      return maxInWork;
    },
  };
}

describe('claim loop', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });
  const track = <T extends { loop: ClaimLoop<Item> }>(h: T): T => {
    close = () => h.loop.close(0);
    return h;
  };

  it('works at most `limit` items at once, claiming only the free slots', async () => {
    const h = track(harness({ limit: () => 3 }));
    h.add('a', 'b', 'c', 'd', 'e');
    h.loop.notify();
    await waitFor('three in work', () => h.started.length === 3);
    assert.deepEqual(h.started, ['a', 'b', 'c']);
    assert.equal(h.loop.size, 3);
    assert.deepEqual(h.loop.ids().sort(), ['a', 'b', 'c']);
    assert.deepEqual(h.claims, [3]);

    h.done('b');
    await waitFor('d in work', () => h.started.includes('d'));
    assert.equal(h.claims.at(-1), 1, 'one slot was free');
    assert.equal(h.started.length, 4);
    for (const id of ['a', 'c', 'd']) h.done(id);
    await waitFor('e in work', () => h.started.includes('e'));
    h.done('e');
    await waitFor('an empty loop', () => h.loop.size === 0);
    assert.equal(h.maxInWork, 3);
  });

  it('ahead: holds that many more claimed, starts one as a slot frees without a claim, and refills in batches', async () => {
    const h = track(harness({ limit: () => 2, ahead: () => 4 }));
    h.add('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i');
    h.loop.notify();
    await waitFor('two in work', () => h.started.length === 2);
    assert.deepEqual(h.claims, [6], 'its slots and as many again as it may hold ahead');
    assert.deepEqual(h.started, ['a', 'b']);
    assert.equal(h.loop.size, 2, 'the held ones are not in work');

    h.done('a');
    await waitFor('c in work', () => h.started.includes('c'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(h.claims, [6], 'a slot that frees starts a held item; one item gone from the hold is no claim');
    h.done('b');
    await waitFor('d in work, then a refill', () => h.started.includes('d') && h.claims.length === 2);
    assert.equal(h.claims[1], 2, 'half of the hold gone: one claim for it');
    assert.equal(h.maxInWork, 2, 'never more than `limit` at once');
  });

  it('ahead: a stop gives back what was held and not started; a held item whose lease is lost is dropped', async () => {
    const given: string[][] = [];
    const dropped: string[] = [];
    const h = harness({
      limit: () => 1,
      ahead: () => 3,
      giveBack: async (items) => void given.push(items.map((i) => i.id)),
      dropped: (item) => void dropped.push(item.id),
    });
    h.add('a', 'b', 'c', 'd');
    h.loop.notify();
    await waitFor('a in work', () => h.started.length === 1);
    h.loop.abort('c', new Error('lease lost'));
    assert.deepEqual(dropped, ['c']);
    const drained = h.loop.close(5000);
    await waitFor('the held ones given back', () => given.length === 1);
    assert.deepEqual(given, [['b', 'd']]);
    h.done('a');
    await drained;
    assert.deepEqual(h.started, ['a'], 'nothing held was started after the stop');
  });

  it('spare: its free slots; at most what it claims at a time while the ingress is busy; none once stopped', async () => {
    let busy = false;
    const h = track(harness({ limit: () => 3, ingressBusy: () => busy, yieldTo: { gapMs: YIELD_GAP_MS, items: 2 } }));
    assert.equal(h.loop.spare, 3);
    h.add('a');
    h.loop.notify();
    await waitFor('a in work', () => h.started.includes('a'));
    assert.equal(h.loop.spare, 2);
    busy = true;
    h.add('b', 'c');
    assert.equal(h.loop.spare, 2, 'free 2, yield 2');
    h.loop.notify();
    await waitFor('b and c in work', () => h.started.includes('c'));
    assert.equal(h.loop.spare, 0);
    h.done('a');
    await waitFor('a done', () => h.loop.size === 2);
    assert.equal(h.loop.spare, 1);
    h.loop.stop();
    assert.equal(h.loop.spare, 0);
  });

  it('while the ingress is busy, claims once per YIELD_GAP_MS and at most YIELD_CLAIM items; at full speed again once it is not', async () => {
    let busy = true;
    const h = track(harness({ limit: () => 20, ingressBusy: () => busy, yieldTo }));
    h.add(...Array.from({ length: 40 }, (_, i) => `i${i}`));
    const t0 = performance.now();
    h.loop.notify();
    await waitFor('the first claim', () => h.started.length === YIELD_CLAIM);
    assert.deepEqual(h.claims, [YIELD_CLAIM], 'a busy ingress: a small claim');
    for (let i = 0; i < YIELD_CLAIM; i++) h.done(`i${i}`);
    h.loop.notify();
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(h.claims.length, 1, 'no second claim within the gap, however often it is told');
    await waitFor(
      'the second claim, its items in work',
      () => h.claims.length === 2 && h.started.length === 2 * YIELD_CLAIM,
    );
    assert.ok(performance.now() - t0 >= YIELD_GAP_MS - 5, `the second claim came after ${performance.now() - t0} ms`);
    assert.equal(h.claims[1], YIELD_CLAIM);
    busy = false;
    for (let i = YIELD_CLAIM; i < 2 * YIELD_CLAIM; i++) h.done(`i${i}`);
    await waitFor(
      'a full claim, its items in work',
      () => h.claims.includes(20) && h.started.length === 2 * YIELD_CLAIM + 20,
    );
    assert.equal(h.started.length, 2 * YIELD_CLAIM + 20);
  });

  it('a stop while yielding claims nothing more', async () => {
    // A long gap: the items must end within it (on a loaded machine 200 ms passed between the claim and their end, and
    // the loop, past its gap, rightly claimed again).
    const gapMs = 2_000;
    const h = track(harness({ limit: () => 4, ingressBusy: () => true, yieldTo: { gapMs, items: 2 } }));
    h.add('a', 'b', 'c', 'd', 'e', 'f');
    h.loop.notify();
    await waitFor('a claim', () => h.started.length === 2);
    for (const id of [...h.started]) h.done(id);
    // The finished items tell the loop, which is within the gap: it pauses until the gap has passed.
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    assert.equal(h.loop.size, 0);
    h.loop.stop();
    await new Promise((r) => setTimeout(r, gapMs + 30));
    assert.equal(h.claims.length, 1);
  });

  it('reads the limit on every claim (a config reload changes it)', async () => {
    let limit = 1;
    const h = track(harness({ limit: () => limit }));
    h.add('a', 'b', 'c');
    h.loop.notify();
    await waitFor('a in work', () => h.started.length === 1);
    limit = 3;
    h.loop.notify();
    await waitFor('all three in work', () => h.started.length === 3);
    assert.deepEqual(h.claims.slice(0, 2), [1, 2]);
  });

  it('a finished item makes it claim again without being told; a full loop does not claim', async () => {
    const h = track(harness({ limit: () => 1 }));
    h.add('a', 'b');
    h.loop.notify();
    await waitFor('a in work', () => h.started.length === 1);
    const claimsWhileFull = h.claims.length;
    h.loop.notify();
    h.loop.notify();
    await new Promise((r) => setImmediate(r));
    assert.equal(h.claims.length, claimsWhileFull, 'no claim while every slot is taken');
    h.done('a');
    await waitFor('b in work', () => h.started.includes('b'));
  });

  it("claimAfterWork 'if-expected': an item's end claims only after a full claim, a notify with no free slot, or expect()", async () => {
    const h = track(harness({ limit: () => 2, claimAfterWork: 'if-expected' }));
    const settle = () => new Promise((r) => setTimeout(r, 20));
    h.add('a');
    h.loop.notify();
    await waitFor('a in work', () => h.started.includes('a'));
    h.done('a');
    await waitFor('a done', () => h.loop.size === 0);
    await settle();
    assert.deepEqual(h.claims, [2], 'one short claim (no claim again at once), and none when a ended');

    h.add('b', 'c', 'd');
    h.loop.notify();
    await waitFor('b and c in work', () => h.started.includes('c'));
    h.done('b');
    await waitFor('d in work (the claim before came back full)', () => h.started.includes('d'));
    h.done('c'); // the claim of d was full too: one more claim, which finds nothing
    await waitFor('c done', () => h.loop.size === 1);
    await settle();
    h.done('d');
    await waitFor('d done', () => h.loop.size === 0);
    await settle();
    assert.deepEqual(h.claims, [2, 2, 1, 1], 'after the empty claim, d ending claims nothing');

    h.add('e');
    h.loop.notify();
    await waitFor('e in work', () => h.started.includes('e'));
    h.add('f');
    h.loop.expect();
    h.done('e');
    await waitFor('f in work (expected)', () => h.started.includes('f'));
    h.add('g', 'h');
    h.loop.notify();
    await waitFor('g in work', () => h.started.includes('g'));
    h.add('i');
    h.loop.notify(); // no free slot: the next item to end claims it
    h.done('f');
    await waitFor('h or i in work', () => h.started.includes('h'));
    h.done('g');
    await waitFor('i in work', () => h.started.includes('i'));
    h.done('h');
    h.done('i');
  });

  it('claimAfterWork as a function: an item it names claims when it ends; others only when work is expected', async () => {
    const h = track(harness({ limit: () => 2, claimAfterWork: (item) => item.id.startsWith('frees') }));
    const settle = () => new Promise((r) => setTimeout(r, 20));
    h.add('alone');
    h.loop.notify();
    await waitFor('alone in work', () => h.started.includes('alone'));
    h.done('alone');
    await waitFor('alone done', () => h.loop.size === 0);
    await settle();
    assert.deepEqual(h.claims, [2], 'a short claim, and no claim when an item it does not name ends');

    h.add('frees-next');
    h.loop.notify();
    await waitFor('frees-next in work', () => h.started.includes('frees-next'));
    h.add('next'); // made claimable by frees-next's end, as a session's next run by the run before it
    h.done('frees-next');
    await waitFor('next in work (claimed when frees-next ended)', () => h.started.includes('next'));
    assert.deepEqual(h.claims, [2, 2, 2]);

    h.add('x', 'y');
    h.loop.notify(); // one slot free: claims one, a full claim
    await waitFor('x in work', () => h.started.includes('x'));
    h.done('next'); // not named, but the last claim came back full: expected
    await waitFor('y in work', () => h.started.includes('y'));
    h.done('x');
    h.done('y');
  });

  it('claims one batch at a time; a wake-up during a claim is answered with one more claim', async () => {
    const h = track(harness({ limit: () => 10 }));
    h.loop.notify(); // claims an empty queue...
    h.add('late'); // ...and this arrives after the store answered, while the claim is still in flight
    h.loop.notify();
    h.loop.notify();
    await waitFor('late in work (only the remembered wake-up claims it: the poll is a minute away)', () =>
      h.started.includes('late'),
    );
    assert.equal(h.maxClaiming, 1);
    assert.deepEqual(
      h.claims,
      [10, 10],
      'one more claim for the wake-ups during the first; none after late started (that claim came back short)',
    );
  });

  it('polls for work it was not told about', async () => {
    const h = track(harness({ pollMs: 20 }));
    h.loop.notify();
    await waitFor('the first claim', () => h.claims.length === 1);
    h.add('found');
    await waitFor('found by the poll', () => h.started.includes('found'));
  });

  it('a failing claim pauses the loop with backoff (logged once), resumes by itself; a failing item frees its slot', async () => {
    let fail = true;
    let tries = 0;
    const h = track(
      harness({
        limit: () => 1,
        async claim(n) {
          tries++;
          if (fail) throw Object.assign(new Error('database is locked'), { code: 'store_unavailable' });
          return n > 0 ? [{ id: 'x' }] : [];
        },
        async work(item) {
          if (item.id === 'x') {
            fail = true; // stop the supply
            throw new Error('boom');
          }
        },
      }),
    );
    h.loop.notify();
    const paused = 'claiming items failed: paused, retrying with backoff (logged once until it works again)';
    await waitFor('the claim failure logged', () => h.logs.some((l) => l.msg === paused));
    assert.equal(h.logs[0]?.obj.err, 'database is locked');
    assert.equal(h.logs[0]?.obj.code, 'store_unavailable');
    // Paused: wake-ups meanwhile do not claim (no spinning against a store that is down).
    for (let i = 0; i < 100; i++) h.loop.notify();
    assert.equal(tries, 1);
    fail = false;
    // The backoff's first wait is 0.5–1 s: the loop resumes by itself, without another wake-up.
    await waitFor('claiming resumed', () => h.logs.some((l) => l.msg === 'claiming items works again: resumed'), 3000);
    const resumedAt = h.logs.findIndex((l) => l.msg === 'claiming items works again: resumed');
    assert.equal(h.logs.slice(0, resumedAt).filter((l) => l.msg === paused).length, 1, 'logged once per outage');
    assert.ok(tries >= 2);
    await waitFor('the work failure logged', () => h.logs.some((l) => l.msg === 'working on items failed'));
    assert.deepEqual(h.logs.find((l) => l.msg === 'working on items failed')?.obj, { id: 'x', err: 'boom' });
    await waitFor('the slot freed', () => h.loop.size === 0);
  });

  it('close stops claiming, lets items finish within the grace period, then aborts the rest', async () => {
    const h = harness({ limit: () => 2 });
    h.add('quick', 'slow', 'never');
    h.loop.notify();
    await waitFor('two in work', () => h.started.length === 2);
    const closing = h.loop.close(100);
    h.done('quick');
    await closing;
    assert.deepEqual(h.aborted, ['slow']);
    assert.deepEqual(h.started, ['quick', 'slow'], 'nothing claimed after close');
    assert.equal(h.loop.size, 0);
    h.loop.notify();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(h.queue, [{ id: 'never' }]);
  });

  it('drives the store: runs claimed through it are leased to the owner', async () => {
    const kit = await startRuntimeKit();
    try {
      const ids = [await kit.queueRun(), await kit.queueRun(), await kit.queueRun()];
      const worked: string[] = [];
      const loop = new ClaimLoop({
        label: 'runs',
        logger: kit.deps.logger,
        limit: () => 2,
        pollMs: 60_000,
        claim: (n) => kit.store.claimRuns('loop-owner', Date.now(), 30_000, n),
        work: async (run) => {
          worked.push(run.id);
          assert.equal((await kit.store.getRun(run.id))?.state, 'running');
        },
      });
      loop.notify();
      await waitFor('every run worked', () => worked.length === 3);
      await loop.close(0);
      assert.deepEqual([...worked].sort(), [...ids].sort());
    } finally {
      await kit.close();
    }
  });
});
