import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deadline } from '../src/deadline.js';

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
