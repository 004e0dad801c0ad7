import { performance } from 'node:perf_hooks';

/** Requests that arrive in one turn of the event loop from which the ingress counts as saturated. */
export const BUSY_TURN_REQUESTS = 8;
/** Requests waiting for their commit at once from which the ingress counts as saturated. */
export const BUSY_COMMITTING = 8;
/**
 * How long one sign of saturation keeps the ingress counted as busy. Saturated, every turn re-arms it (a turn lasts a
 * few ms), so this is only how long the runtime waits after the last one: short, so a burst's backlog starts
 * draining at once.
 */
export const BUSY_HOLD_MS = 25;

/**
 * Whether the ingress is saturated: requests queue up here. The runtime's claim loops read it to yield the core
 * during a burst (claim-loop.ts): the backlog waits in the store and is worked off afterwards, instead of the run
 * worker taking the core the answers need. Two signs, either one enough:
 *
 * - many requests arrive in one turn of the event loop. At a rate the process keeps up with, each turn brings one to
 *   three; tens of busy connections bring dozens when the turns are long (SQLite: the commits take the same core).
 * - many requests wait for their commit at once. By Little's law that is the rate times the commit's latency: 1 to 3
 *   at a rate the node keeps up with, about one per busy connection when they queue. This is the sign on PostgreSQL,
 *   where each commit waits for a round trip: the turns are short, and few requests arrive in each even when the
 *   node is saturated. Only requests whose body is complete count (a sender trickling its body waits on itself, not
 *   on this node), and not one held for its run (`waitForCompletion`: most of its wait is the runtime's work).
 *
 * The first re-arms a short hold; the second says busy while the count stays up and for the hold after it falls.
 * Requests stuck on a store that hangs keep it busy until the store answers or fails them: the claim loops still
 * claim once per gap meanwhile, and their claims wait on the same store.
 */
export class IngressPressure {
  private inTurn = 0;
  private committing = 0;
  private busyUntil = 0;
  private readonly endTurn = (): void => {
    if (this.inTurn >= this.turnThreshold) this.busyUntil = performance.now() + this.holdMs;
    this.inTurn = 0;
  };

  constructor(
    private readonly turnThreshold = BUSY_TURN_REQUESTS,
    private readonly holdMs = BUSY_HOLD_MS,
    private readonly committingThreshold = BUSY_COMMITTING,
  ) {}

  /** A request arrived (any request, refused or not: a flood of refusals takes the core as well). */
  arrived(): void {
    if (++this.inTurn === 1) setImmediate(this.endTurn);
  }

  /** A request with its body read starts its commit; `committed` must follow, whatever the outcome. */
  commitStarted(): void {
    this.committing++;
  }

  committed(): void {
    // The hold starts when the queue falls below the threshold: a batch's answers empty it at once, and the next
    // requests refill it a round trip later.
    if (this.committing-- === this.committingThreshold) this.busyUntil = performance.now() + this.holdMs;
  }

  /** Requests waiting for their commit now. */
  get waiting(): number {
    return this.committing;
  }

  busy(now = performance.now()): boolean {
    return this.committing >= this.committingThreshold || now < this.busyUntil;
  }
}
