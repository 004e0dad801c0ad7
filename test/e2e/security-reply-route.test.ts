/**
 * Who decides where the main agent's replies go (docs/security.md, "Who decides where replies go"), against the real
 * server process and the Discord stand-in: hook requests naming an attacker's channel, directly and through a mapping
 * whose `to` is a payload field, are delivered where they asked, yet the heartbeat reply that follows a wake goes to
 * `channels.default`, and once the operator set the main session's route, there; never to an attacker. Runs on
 * SQLite, and on PostgreSQL with HOOKGATE_TEST_STORE=postgres. `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DiscordMessage, StandIn } from '../support/platforms/index.js';
import {
  DEFAULT_CHANNEL,
  hijackConfig,
  OWNER_CHANNEL,
  probeRouteHijack,
  startHijackDiscord,
} from '../support/route-hijack.js';
import { cli, startServer } from '../support/runtime-kit.js';
import type { Hookgate } from '../support/server.js';

const ATTACKS = 4;

describe("security: only the operator decides where the main agent's replies go", { timeout: 180_000 }, () => {
  let discord: StandIn<DiscordMessage>;
  let hg: Hookgate;

  before(async () => {
    discord = await startHijackDiscord(ATTACKS);
    hg = await startServer(hijackConfig({ heartbeat: { every: 'off' } }, discord.url));
  });
  after(async () => {
    await hg?.cleanup();
    await discord?.close();
  });

  const mainRoute = async () => {
    const show = await cli(hg, 'sessions', 'show', 'main', '--json');
    assert.equal(show.code, 0, show.stderr);
    const s = JSON.parse(show.stdout) as { lastChannel: string | null; lastTo: string | null };
    return s.lastChannel === null ? null : `${s.lastChannel}:${s.lastTo}`;
  };

  it('at start, a log line names the route in force and who set it', () => {
    const line = hg.logs.find(
      (l) =>
        typeof l.msg === 'string' &&
        l.msg.startsWith("the main agent's replies (heartbeats, `channel: last`) go to this route"),
    );
    assert.deepEqual([line?.route, line?.setBy], [`discord:${DEFAULT_CHANNEL}`, 'channels.default']);
  });

  it('with no route set, explicit and templated recipients get their own replies; the heartbeat reply goes to channels.default', async () => {
    const probe = await probeRouteHijack(hg, discord, { attacks: ATTACKS, tag: 'no-route' });
    assert.equal(probe.attacksDelivered, ATTACKS, 'an explicit delivery did not reach the recipient it named');
    assert.equal(probe.heartbeats, 1);
    assert.equal(probe.hijacked, 0, 'the heartbeat reply reached an attacker');
    assert.deepEqual(probe.heartbeatChannels, [DEFAULT_CHANNEL]);
    assert.equal(await mainRoute(), null);
  });

  it('with the route the operator set, the heartbeat reply goes there, and the attacks leave it as it was', async () => {
    const set = await cli(hg, 'sessions', 'route', 'main', '--channel', 'discord', '--to', OWNER_CHANNEL);
    assert.equal(set.code, 0, set.stderr);
    const probe = await probeRouteHijack(hg, discord, { attacks: ATTACKS, tag: 'owner-route' });
    assert.equal(probe.attacksDelivered, ATTACKS);
    assert.equal(probe.heartbeats, 1);
    assert.equal(probe.hijacked, 0, 'the heartbeat reply reached an attacker');
    assert.deepEqual(probe.heartbeatChannels, [OWNER_CHANNEL]);
    assert.equal(await mainRoute(), `discord:${OWNER_CHANNEL}`);
  });
});
