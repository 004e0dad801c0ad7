/**
 * Transport-level cases every HTTP platform channel must get right, registered as node:test cases inside the
 * caller's describe(): a dropped connection, a platform that never answers, the caller aborting. All three must be
 * retryable failures (the message may not have arrived) and must not leak secrets. Also: a retryable answer that
 * carries a Retry-After header passes the platform's wait hint on to the outbox.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Channel, OutboundMessage } from '../../../src/channels/types.js';
import type { FailureKind, StandIn } from './base.js';
import { waitFor } from '../wait.js';
import { assertNoSecrets, outbound } from './fixtures.js';

/** A bound, not a wait: on a loaded 2-core machine a send (OAuth signing included) once took over 5 s. */
const SEND_BOUND_MS = 20_000;

export interface TransportCaseOptions {
  standIn: () => StandIn<unknown>;
  /** A channel pointed at the stand-in, with the given per-request timeout. */
  channel: (timeoutMs: number) => Channel;
  /** A recipient the stand-in accepts. */
  to: string;
  /** Values that must never appear in a result (tokens, passwords). */
  secrets: () => string[];
  /**
   * The stand-in failure whose answer is a retryable HTTP error without a wait hint in its body (default
   * `server_error`; Signal's server_error is a 400 describing an IO error, so it uses `rate_limit`).
   */
  hintedFailure?: FailureKind;
}

export function transportCases(o: TransportCaseOptions): void {
  const text = 'transport case text';
  const send = (m: OutboundMessage, timeoutMs: number, signal?: AbortSignal) => o.channel(timeoutMs).send(m, signal);

  it('a dropped connection is a retryable failure', async () => {
    o.standIn().failNext(1, 'disconnect');
    const r = await send(outbound(o.to, text), SEND_BOUND_MS);
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.retryable, 'retryable');
    assert.match(!r.ok ? r.error : '', /unreachable/);
    assertNoSecrets(r, [...o.secrets(), text]);
  });

  it('no answer within timeoutMs is a retryable failure', async () => {
    o.standIn().failNext(1, 'hang');
    const started = Date.now();
    const r = await send(outbound(o.to, text), 200);
    assert.ok(Date.now() - started < 3000, 'gave up near the timeout');
    assert.ok(!r.ok && r.retryable);
    assert.match(!r.ok ? r.error : '', /did not answer in time/);
  });

  it("the caller's abort signal stops the request, retryably", async () => {
    const standIn = o.standIn();
    standIn.failNext(1, 'hang');
    const ac = new AbortController();
    const sending = send(outbound(o.to, text), 10_000, ac.signal);
    // Aborted once the stand-in holds the send (its hang taken): a fixed 50 ms could pass before the send reached it on
    // a busy machine, and the hang left queued made the next test's send wait for its timeout.
    await waitFor('the stand-in holds the send', () => standIn.pendingFailures() === 0 || undefined);
    ac.abort();
    const r = await sending;
    assert.ok(!r.ok && r.retryable);
    assert.match(!r.ok ? r.error : '', /aborted/);
  });

  it('a retryable answer with a Retry-After header passes the wait on', async () => {
    o.standIn().failNext(1, o.hintedFailure ?? 'server_error', { 'retry-after': '3' });
    const r = await send(outbound(o.to, text), SEND_BOUND_MS);
    assert.ok(!r.ok && r.retryable, JSON.stringify(r));
    assert.equal(!r.ok && r.retryAfterMs, 3000, JSON.stringify(r));
  });

  it('after failures, the next send goes through', async () => {
    const before = o.standIn().received.length;
    const r = await send(outbound(o.to, 'after the failures'), SEND_BOUND_MS);
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(o.standIn().received.length, before + 1);
  });
}
