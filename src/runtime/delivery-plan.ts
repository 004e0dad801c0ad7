import type { NewDelivery } from '../store/types.js';
import { isHeartbeatAck } from './heartbeat-ack.js';
import { resolveRoute, type RouteInputs } from './routing.js';

/** Where a reply goes: one outbox row, or why none (the run's `deliveryStatus`). */
export type DeliveryPlan =
  | { status: 'outbox'; delivery: NewDelivery }
  | { status: 'suppressed:deliver_false' | 'suppressed:heartbeat_ack' | 'nowhere:no_route'; delivery?: undefined };

export interface DeliveryPlanInputs extends RouteInputs {
  reply: string;
  /** The run's `deliver` flag (a heartbeat always delivers). */
  deliver: boolean;
  /** `heartbeat.ackMaxChars`: a reply that is only `HEARTBEAT_OK` plus at most this much is not delivered. */
  ackMaxChars: number;
  /** The new outbox row's id (the caller draws it: this function is pure). */
  id: string;
  /** What the reply answers: the row's run or heartbeat, session, agent and hook name. */
  origin: Pick<NewDelivery, 'runId' | 'heartbeatId' | 'sessionKey' | 'agentId' | 'hookName'>;
  at: number;
}

/**
 * Plans the delivery of an agent reply (a hook run's or the heartbeat's): nowhere when deliver is off or the reply
 * is only an acknowledgement (HEARTBEAT_OK); else to the resolved route (`resolveRoute`), or nowhere without one.
 */
export function planDelivery(p: DeliveryPlanInputs): DeliveryPlan {
  if (!p.deliver) return { status: 'suppressed:deliver_false' };
  if (isHeartbeatAck(p.reply, p.ackMaxChars)) return { status: 'suppressed:heartbeat_ack' };
  const route = resolveRoute(p);
  if (!route) return { status: 'nowhere:no_route' };
  return {
    status: 'outbox',
    delivery: {
      id: p.id,
      ...p.origin,
      channel: route.channel,
      to: route.to,
      accountId: route.accountId,
      text: p.reply,
      explicitRoute: route.explicit,
      createdAt: p.at,
    },
  };
}
