/** What the IRC channel tests share: a context whose log lines they can read, messages, a channel with test timings. */
import { ircSchema } from '../../../src/config/schema/channels.js';
import { createIrcChannel, type IrcChannel, type IrcChannelOptions } from '../../../src/channels/irc.js';
import type { ChannelContext, OutboundMessage } from '../../../src/channels/types.js';

// ----------------------------------------------------------------------------------------------------------------
// helpers

export interface LogEntry {
  level: string;
  obj: object;
  msg: string | undefined;
}
export function testContext(): ChannelContext & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void entries.push({ level, obj, msg });
  return { configDir: process.cwd(), logger: { info: at('info'), warn: at('warn'), error: at('error') }, entries };
}

let seq = 0;
export function message(to: string, text: string): OutboundMessage {
  seq++;
  return {
    deliveryId: `dlv-${seq}`,
    channel: 'irc',
    to,
    text,
    runId: `run-${seq}`,
    sessionKey: 'hook:test',
    agentId: 'main',
    hookName: 'test',
    createdAt: new Date().toISOString(),
  };
}

export function ircChannel(
  config: Record<string, unknown>,
  options: IrcChannelOptions = {},
  ctx = testContext(),
): IrcChannel {
  return createIrcChannel(ircSchema.parse({ tls: false, floodIntervalMs: 0, timeoutMs: 10_000, ...config }), ctx, {
    reconnectBaseMs: 200,
    ...options,
  });
}
