import { performance } from 'node:perf_hooks';

/** Requests that arrive in one turn of the event loop from which the ingress counts as saturated. */
export const BUSY_TURN_REQUESTS = 8;
/**
 * How long one saturated turn keeps the ingress counted as busy. Saturated, every turn re-arms it (a turn lasts a
 * few ms), so this is only how long the runtime waits after the last one: short, so a burst's backlog starts
 * draining at once.
 */
export const BUSY_HOLD_MS = 25;

/**
 * Whether the ingress is saturated: requests queue up, so many arrive in one turn of the event loop. At a rate the
 * process keeps up with, each turn brings one to three; tens of busy connections bring dozens. The runtime's claim
 * loops read it to yield the core during a burst (claim-loop.ts): the backlog waits in the store and is worked off
 * afterwards, instead of the run worker taking the core the answers need.
 */
export class IngressPressure {
  private inTurn = 0;
  private busyUntil = 0;
  private readonly endTurn = (): void => {
    if (this.inTurn >= this.threshold) this.busyUntil = performance.now() + this.holdMs;
    this.inTurn = 0;
  };

  constructor(
    private readonly threshold = BUSY_TURN_REQUESTS,
    private readonly holdMs = BUSY_HOLD_MS,
  ) {}

  /** A request arrived (any request, refused or not: a flood of refusals takes the core as well). */
  arrived(): void {
    if (++this.inTurn === 1) setImmediate(this.endTurn);
  }

  busy(now = performance.now()): boolean {
    return now < this.busyUntil;
  }
}
