import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Abort, deadline, following, whenAborted } from '../src/deadline.js';

describe('deadline', () => {
  it('aborts with the outer signal’s reason when it aborts first; not timed out', () => {
    const outer = new AbortController();
    const d = deadline(outer.signal, 60_000, () => new Error('late'));
    outer.abort(new Error('stopping'));
    assert.equal(d.signal.aborted, true);
    assert.equal((d.signal.reason as Error).message, 'stopping');
    assert.equal(d.timedOut, false);
    d.dispose();
  });

  it('aborts with reason() once the time passes, and says so', async () => {
    const outer = new AbortController();
    const d = deadline(outer.signal, 10, () => new Error('time is up'));
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(d.timedOut, true);
    assert.equal((d.signal.reason as Error).message, 'time is up');
    d.dispose();
  });

  it('is aborted at once when the outer signal already was; no time limit when ms is undefined', () => {
    const outer = new AbortController();
    outer.abort('gone');
    const d = deadline(outer.signal, undefined, () => 'never');
    assert.equal(d.signal.aborted, true);
    assert.equal(d.signal.reason, 'gone');
    d.dispose();
  });

  it('dispose lets go of the outer signal and the timer: neither aborts it afterwards', async () => {
    const outer = new AbortController();
    const d = deadline(outer.signal, 10, () => 'late');
    d.dispose();
    outer.abort('stopping');
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(d.signal.aborted, false);
    assert.equal(d.timedOut, false);
  });
});

describe('deadline without an outer abort', () => {
  it('fires only when its time passes', async () => {
    const d = deadline(undefined, 10, () => 'late');
    assert.equal(d.aborted, false);
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(d.timedOut, true);
    assert.equal(d.reason, 'late');
    d.dispose();
    const never = deadline(undefined, undefined, () => 'never');
    assert.equal(never.aborted, false);
    never.dispose();
  });
});

describe('following', () => {
  it('aborts with its outer, or on its own without touching the outer; disposed, it lets go of the outer', () => {
    const stop = new Abort();
    const lease = following(stop);
    lease.abort('lease lost');
    assert.equal(stop.aborted, false);
    assert.equal(lease.reason, 'lease lost');
    lease.dispose();

    const next = following(stop);
    const gone = following(stop);
    gone.dispose();
    stop.abort('stopping');
    assert.equal(next.reason, 'stopping');
    assert.equal(gone.aborted, false);
    next.dispose();
  });
});

describe('Abort', () => {
  /** Counts the AbortControllers made while `fn` runs (an Abort makes one only for its `signal`). */
  function controllersMade(fn: () => void): number {
    const Real = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Real {
      constructor() {
        super();
        made++;
      }
    };
    try {
      fn();
    } finally {
      globalThis.AbortController = Real;
    }
    return made;
  }

  it('makes no AbortSignal until one is asked for, through any depth of deadlines', () => {
    const made = controllersMade(() => {
      const stop = new Abort();
      const run = deadline(stop, 60_000, () => 'late');
      const attempt = deadline(run, 60_000, () => 'late');
      stop.abort(new Error('stopping'));
      assert.equal(attempt.aborted, true);
      assert.equal((attempt.reason as Error).message, 'stopping');
      attempt.dispose();
      run.dispose();
    });
    assert.equal(made, 0);
  });

  it('its signal is made once, follows it, and is aborted at once when made after the abort', () => {
    const a = new Abort();
    const s = a.signal;
    assert.equal(a.signal, s);
    assert.equal(s.aborted, false);
    a.abort('why');
    assert.equal(s.aborted, true);
    assert.equal(s.reason, 'why');

    const late = new Abort();
    late.abort();
    assert.equal((late.reason as DOMException).name, 'AbortError');
    assert.equal(late.signal.aborted, true);
    assert.equal(late.signal.reason, late.reason);
  });

  it('calls each listener once, in order; a cancelled one not at all; aborting again does nothing', () => {
    const a = new Abort();
    const calls: string[] = [];
    a.onAbort(() => calls.push('first'));
    const cancel = a.onAbort(() => calls.push('cancelled'));
    a.onAbort(() => calls.push('second'));
    cancel();
    a.abort(1);
    a.abort(2);
    assert.deepEqual(calls, ['first', 'second']);
    assert.equal(a.reason, 1);
    a.onAbort(() => calls.push('after'));
    assert.deepEqual(calls, ['first', 'second']);
  });

  it('a listener that throws does not stop the others nor the caller; its error is uncaught, as EventTarget does', () => {
    const a = new Abort();
    const calls: string[] = [];
    a.onAbort(() => {
      throw new Error('listener bug');
    });
    a.onAbort(() => calls.push('second'));
    const reported: unknown[] = [];
    const real = process.nextTick;
    // Only abort() runs while this stands in: it runs what it is given at once and keeps what that throws.
    process.nextTick = ((fn: () => void) => {
      try {
        fn();
      } catch (err) {
        reported.push(err);
      }
    }) as typeof process.nextTick;
    try {
      a.abort('why');
    } finally {
      process.nextTick = real;
    }
    assert.deepEqual(calls, ['second']);
    assert.equal((reported[0] as Error).message, 'listener bug');
  });

  it('whenAborted listens to a real signal too, and lets go of it', () => {
    const ctrl = new AbortController();
    let calls = 0;
    whenAborted(ctrl.signal, () => calls++)();
    const d = deadline(ctrl.signal, undefined, () => 'never');
    ctrl.abort('gone');
    assert.equal(calls, 0);
    assert.equal(d.reason, 'gone');
    d.dispose();
  });

  it('a deadline on an outer that already aborted sets no timer: it is not timed out later', async () => {
    const stop = new Abort();
    stop.abort('stopping');
    const d = deadline(stop, 5, () => 'late');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(d.reason, 'stopping');
    assert.equal(d.timedOut, false);
    d.dispose();
  });
});
