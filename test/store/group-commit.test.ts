import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StoreError } from '../../src/errors.js';
import { type Commit, commitIsolated, GroupCommit, type WriteResult } from '../../src/store/group-commit.js';

/**
 * How the writer answers: `async` as a writer thread or PostgreSQL (a promise), `sync` as SQLite on the event loop's
 * thread (the results at once). Every behaviour below holds for both.
 */
for (const answering of ['async', 'sync'] as const) {
  const asWriter = (commit: (ops: string[]) => WriteResult[]): Commit<string> =>
    answering === 'sync' ? commit : async (ops) => commit(ops);

  /** A group commit over a fake writer: records each batch, answers each op with `answer`. */
  function recording(answer: (op: string) => WriteResult = (op) => ({ ok: true, value: op.toUpperCase() })) {
    const batches: string[][] = [];
    const gc = new GroupCommit<string>(
      asWriter((ops) => {
        batches.push(ops);
        return ops.map(answer);
      }),
    );
    return { gc, batches };
  }

  /** Commits with the event-loop turn each batch was committed in (a setImmediate chain counts the turns). */
  function turnCounting(ingressBusy: () => boolean) {
    let turn = 0;
    let counting = true;
    const next = () => {
      turn++;
      if (counting) setImmediate(next);
    };
    setImmediate(next);
    const batches: Array<{ ops: string[]; turn: number }> = [];
    const gc = new GroupCommit<string>(
      asWriter((ops) => {
        batches.push({ ops, turn });
        return ops.map((value) => ({ ok: true, value }));
      }),
      undefined,
      ingressBusy,
    );
    return { gc, batches, stop: () => (counting = false) };
  }

  describe(`GroupCommit, the writer answering ${answering}`, () => {
    it("commits the runtime's follow-up writes in the same turn (a route's next delivery), at most 16 batches a turn", async () => {
      const { gc, batches, stop } = turnCounting(() => false);
      let chain: Promise<unknown> = gc.write('w0');
      for (let i = 1; i < 40; i++) chain = chain.then(() => gc.write(`w${i}`));
      await chain;
      stop();
      assert.equal(batches.length, 40);
      const turns = batches.map((b) => b.turn);
      assert.equal(new Set(turns.slice(0, 16)).size, 1, 'the first 16 in one turn');
      assert.ok(turns[16]! > turns[15]!, 'the 17th waits for the next turn');
      assert.ok(new Set(turns).size <= 4, `40 chained writes took ${new Set(turns).size} turns`);
    });

    it("while the ingress is saturated, the writes a batch's continuations make wait for the next turn", async () => {
      let busy = true;
      const { gc, batches, stop } = turnCounting(() => busy);
      await gc
        .write('accept-0')
        .then(() => gc.write('delivered-1'))
        .then(() => gc.write('delivered-2'));
      // No longer saturated: what follows chains in the same turn.
      busy = false;
      await gc.write('accept-1').then(() => gc.write('delivered-3'));
      stop();
      assert.deepEqual(
        batches.map((b) => b.ops.length),
        [1, 1, 1, 1, 1],
      );
      const turn = (op: string) => batches.find((b) => b.ops.includes(op))!.turn;
      assert.ok(turn('delivered-1') > turn('accept-0'), 'while saturated, the next turn');
      assert.ok(turn('delivered-2') > turn('delivered-1'), 'and one step per turn while it lasts');
      assert.equal(turn('delivered-3'), turn('accept-1'), 'once it is not, the same turn');
    });

    it('commits the writes of one event-loop turn as one batch, and resolves each with its own result', async () => {
      const { gc, batches } = recording();
      const results = await Promise.all([gc.write('a'), gc.write('b'), gc.write('c')]);
      assert.deepEqual(results, ['A', 'B', 'C']);
      assert.deepEqual(batches, [['a', 'b', 'c']]);
      assert.equal(await gc.write('d'), 'D');
      assert.deepEqual(batches, [['a', 'b', 'c'], ['d']]);
    });

    // Only a writer that answers later can be given writes while it commits.
    if (answering === 'async')
      it('gathers the writes made while a batch commits into the next batch', async () => {
        const batches: string[][] = [];
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        const gc = new GroupCommit<string>(async (ops) => {
          batches.push(ops);
          if (batches.length === 1) await gate;
          return ops.map((value) => ({ ok: true, value }));
        });
        const first = gc.write('a');
        await new Promise((r) => setImmediate(r)); // the first batch is committing
        const later = [gc.write('b'), gc.write('c')];
        release();
        assert.deepEqual(await Promise.all([first, ...later]), ['a', 'b', 'c']);
        assert.deepEqual(batches, [['a'], ['b', 'c']]);
      });

    it('rejects only the op whose result is a failure, as a StoreError', async () => {
      const { gc } = recording((op) =>
        op === 'bad' ? { ok: false, error: 'UNIQUE constraint failed' } : { ok: true, value: op },
      );
      const results = await Promise.allSettled([gc.write('a'), gc.write('bad'), gc.write('c')]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      const reason = (results[1] as PromiseRejectedResult).reason as StoreError;
      assert.ok(reason instanceof StoreError);
      assert.match(reason.message, /store write failed: UNIQUE/);
    });

    it('rejects the whole batch when the commit itself fails, and goes on with the next', async () => {
      let calls = 0;
      const gc = new GroupCommit<string>(
        asWriter((ops) => {
          if (++calls === 1) throw new Error('disk I/O error');
          return ops.map((value) => ({ ok: true, value }));
        }),
      );
      const results = await Promise.allSettled([gc.write('a'), gc.write('b')]);
      for (const r of results) {
        assert.equal(r.status, 'rejected');
        assert.ok(r.reason instanceof StoreError);
        assert.match(r.reason.message, /store commit failed: disk I\/O error/);
      }
      assert.equal(await gc.write('c'), 'c');
    });

    it('once failed, rejects what waits and every later write with the first error', async () => {
      const { gc, batches } = recording();
      const waiting = gc.write('a');
      const first = new StoreError('SQLite writer exited (code 1)');
      gc.fail(first);
      gc.fail(new StoreError('a later error'));
      await assert.rejects(waiting, (e) => e === first);
      await assert.rejects(gc.write('b'), (e) => e === first);
      assert.equal(gc.failure, first);
      assert.deepEqual(batches, [], 'nothing was committed');
    });

    it('idle() waits for the batch in flight; after close() writes are rejected', async () => {
      const { gc, batches } = recording();
      const pending = gc.write('a');
      await gc.idle();
      assert.deepEqual(batches, [['a']]);
      assert.equal(await pending, 'A');
      gc.close();
      await assert.rejects(gc.write('b'), (e) => e instanceof StoreError && /closed/.test(e.message));
    });
  });
}

describe('commitIsolated', () => {
  it('commits a clean batch in one call', () => {
    const seen: string[][] = [];
    const results = commitIsolated(
      ['a', 'b'],
      (ops) => (seen.push(ops), ops.map((o) => `${o}!`)),
      () => assert.fail('no retry'),
      () => assert.fail('no rollback'),
    );
    assert.deepEqual(results, [
      { ok: true, value: 'a!' },
      { ok: true, value: 'b!' },
    ]);
    assert.deepEqual(seen, [['a', 'b']]);
  });

  it('after a failed batch, retries each op alone: only the one that throws again fails', () => {
    let rollbacks = 0;
    const one = (op: string) => {
      if (op === 'bad') throw new Error('constraint');
      return op;
    };
    const results = commitIsolated(
      ['a', 'bad', 'c'],
      (ops) => ops.map(one),
      one,
      () => rollbacks++,
    );
    assert.deepEqual(results, [
      { ok: true, value: 'a' },
      { ok: false, error: 'constraint' },
      { ok: true, value: 'c' },
    ]);
    assert.equal(rollbacks, 2, 'the batch, then the failing op alone');
  });
});
