/**
 * The route-hijack probe (docs/security.md, "Who decides where replies go"): senders ask for their replies at
 * attacker recipients, directly (`/hooks/agent` with `channel`/`to`) and through a mapping whose `to` is a payload
 * field; once those replies arrived where they asked, a wake asks for a heartbeat. The heartbeat reply (the main
 * agent's turn over every sender's events) must go to the operator's route, or `channels.default`, never to an
 * attacker. Shared by test/e2e/security-reply-route.test.ts and the "route hijack" phase of `npm run soak`.
 *
 * A message is told apart at the Discord stand-in by its nonce (derived from the delivery id, chunk by chunk) and the
 * delivery ids in the server's log lines: no reading of the store, so it works the same on SQLite and PostgreSQL.
 */
import { discordNonce } from '../../src/channels/discord.js';
import type { StandIn } from './platforms/base.js';
import { DISCORD_TEST_TOKEN, type DiscordMessage, startDiscord } from './platforms/discord.js';
import type { Hookgate } from './server.js';
import { waitFor } from './wait.js';

/** The recipient an operator sets with `hookgate sessions route`. */
export const OWNER_CHANNEL = '1300000000000000001';
/** `channels.default`'s recipient: where replies go while the operator set no route. */
export const DEFAULT_CHANNEL = '1300000000000000002';
/** The i-th attacker's Discord channel (each attack asks for its own). */
export const attackerChannel = (i: number): string => String(1400000000000000000n + BigInt(i));

/** The mapping a payload steers: `to` is whatever the payload says (the way a Gmail or signed sender's data gets in). */
const RELAY_MAPPING = {
  match: { path: 'relay' },
  action: 'agent',
  name: 'Relay',
  messageTemplate: '{{payload.text}}',
  channel: 'discord',
  to: '{{payload.to}}',
  wakeMode: 'next-heartbeat',
};

/** A Discord stand-in that knows the owner's, the default and `attackers` attacker channels. */
export function startHijackDiscord(attackers: number): Promise<StandIn<DiscordMessage>> {
  return startDiscord({
    channels: [OWNER_CHANNEL, DEFAULT_CHANNEL, ...Array.from({ length: attackers }, (_, i) => attackerChannel(i))],
  });
}

/** `base` with the Discord channel (the stand-in at `discordUrl`), `channels.default` on it, and the relay mapping. */
export function hijackConfig(base: Record<string, any>, discordUrl: string): Record<string, unknown> {
  return {
    ...base,
    agents: { ...base.agents, defaults: { ...base.agents?.defaults, model: 'echo/echo' } },
    channels: {
      ...base.channels,
      discord: { botToken: DISCORD_TEST_TOKEN, apiBaseUrl: discordUrl },
      default: { channel: 'discord', to: DEFAULT_CHANNEL },
    },
    hooks: { ...base.hooks, mappings: [...(base.hooks?.mappings ?? []), RELAY_MAPPING] },
  };
}

export interface HijackProbe {
  /** Attack runs whose reply arrived at the attacker recipient it asked for (a run's own delivery is its sender's). */
  attacksDelivered: number;
  /** Heartbeat deliveries made after the wake. */
  heartbeats: number;
  /** Of those, the ones with a message at an attacker recipient: must be 0. */
  hijacked: number;
  /** The channels the heartbeat deliveries' messages arrived at. */
  heartbeatChannels: string[];
}

/**
 * One probe: `attacks` attack requests (every other one through the relay mapping), then, once their replies were
 * delivered, a wake with mode now; waits for the heartbeat's delivery to end and counts where it went.
 */
export async function probeRouteHijack(
  hg: Hookgate,
  discord: StandIn<DiscordMessage>,
  opts: { attacks: number; tag: string; timeoutMs?: number },
): Promise<HijackProbe> {
  const timeoutMs = opts.timeoutMs ?? 60_000 + opts.attacks * 1000;
  const mark = hg.logs.length;
  const since = () => hg.logs.slice(mark);
  const attackTo = new Map<string, string>();
  for (let i = 0; i < opts.attacks; i++) {
    const to = attackerChannel(i);
    const text = `${opts.tag} attack ${i}`;
    // next-heartbeat, like the mapping: the wake's heartbeat is then the only one, the one each probe looks at.
    const r =
      i % 2 === 0
        ? await hg.post('/hooks/agent', {
            message: text,
            name: 'Attack',
            channel: 'discord',
            to,
            wakeMode: 'next-heartbeat',
          })
        : await hg.post('/hooks/relay', { text, to });
    const runId = r.body?.runId;
    if (r.status !== 200 || typeof runId !== 'string')
      throw new Error(`attack ${i} was not accepted: ${r.status} ${r.text}`);
    attackTo.set(runId, to);
  }
  // Every attack's own reply went out first: had a delivery moved the route, it would have moved by now.
  const attackDeliveries = await waitFor(
    'the attack runs delivered',
    () => {
      const done = since().filter(
        (l) => (l.msg === 'delivered' || l.msg === 'delivery dead-lettered') && attackTo.has(String(l.runId)),
      );
      return done.length >= opts.attacks ? done : undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
  const wakeMark = hg.logs.length;
  const wake = await hg.post('/hooks/wake', {
    text: `${opts.tag} owner-private: the other senders' news`,
    mode: 'now',
  });
  if (wake.status !== 200) throw new Error(`the wake was not accepted: ${wake.status} ${wake.text}`);
  // The wake's heartbeat, then the end of each delivery it made (wakes within ~250 ms share one heartbeat).
  const finished = await waitFor(
    "the wake's heartbeat",
    () => {
      const lines = hg.logs.slice(wakeMark).filter((l) => l.msg === 'heartbeat finished' && l.sessionKey === 'main');
      return lines.length ? lines : undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
  // Only a reply queued for the outbox is delivered (an acknowledgement or a reply with no route is not).
  const heartbeatIds = new Set(finished.filter((l) => l.outcome === 'queued').map((l) => String(l.heartbeatId)));
  const heartbeatDeliveries = await waitFor(
    "the heartbeat's delivery",
    () => {
      const ended = hg.logs
        .slice(wakeMark)
        .filter(
          (l) =>
            (l.msg === 'delivered' || l.msg === 'delivery dead-lettered') && heartbeatIds.has(String(l.heartbeatId)),
        );
      return ended.length >= heartbeatIds.size ? ended : undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
  const channelsOf = (deliveryId: string, chunks: number): string[] => {
    const nonces = new Set(
      [deliveryId, ...Array.from({ length: chunks }, (_, n) => `${deliveryId}_${n + 1}`)].map(discordNonce),
    );
    return discord.received.filter((m) => m.nonce !== undefined && nonces.has(m.nonce)).map((m) => m.channelId);
  };
  const attacker = (channel: string) => channel !== OWNER_CHANNEL && channel !== DEFAULT_CHANNEL;
  const heartbeatChannels = heartbeatDeliveries.map((l) => channelsOf(String(l.deliveryId), Number(l.chunks ?? 1)));
  return {
    attacksDelivered: attackDeliveries.filter((l) =>
      channelsOf(String(l.deliveryId), Number(l.chunks ?? 1)).includes(attackTo.get(String(l.runId))!),
    ).length,
    heartbeats: heartbeatDeliveries.length,
    hijacked: heartbeatChannels.filter((cs) => cs.some(attacker)).length,
    heartbeatChannels: [...new Set(heartbeatChannels.flat())],
  };
}
