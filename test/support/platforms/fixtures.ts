/** Shared bits of the channel tests: an outbound message, a ChannelContext whose logger records what it is given. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChannelContext, OutboundMessage, SendResult } from '../../../src/channels/types.js';

let seq = 0;

export function outbound(to: string, text: string, overrides: Partial<OutboundMessage> = {}): OutboundMessage {
  seq += 1;
  return {
    deliveryId: `dlv-${process.pid}-${seq}`,
    channel: 'test',
    to,
    text,
    runId: 'run-1',
    sessionKey: 'hook:test',
    agentId: 'main',
    hookName: 'test',
    createdAt: new Date(0).toISOString(),
    ...overrides,
  };
}

export interface RecordingContext extends ChannelContext {
  logs: Array<{ level: string; obj: object; msg: string | undefined }>;
}

export function recordingContext(configDir = process.cwd()): RecordingContext {
  const logs: RecordingContext['logs'] = [];
  const at = (level: string) => (obj: object, msg?: string) => void logs.push({ level, obj, msg });
  return { configDir, logs, logger: { info: at('info'), warn: at('warn'), error: at('error') } };
}

/** Fails the test when a result or a log line contains any of the secrets (tokens, passwords, message text). */
export function assertNoSecrets(where: SendResult | RecordingContext['logs'], secrets: string[]): void {
  const text = JSON.stringify(where);
  for (const s of secrets) {
    if (s && text.includes(s))
      throw new Error(`secret leaked: ${JSON.stringify(s.slice(0, 12))}… found in ${text.slice(0, 300)}`);
  }
}

/**
 * What fetch throws when `localhost` resolves to ::1 and 127.0.0.1 and both refuse (happy eyeballs): "fetch failed"
 * whose cause is an AggregateError without a code of its own, holding one ECONNREFUSED per address.
 */
export function happyEyeballsRefused(port = 8080): TypeError {
  const refused = (address: string) =>
    Object.assign(new Error(`connect ECONNREFUSED ${address}:${port}`), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
      address,
      port,
    });
  return new TypeError('fetch failed', {
    cause: new AggregateError([refused('::1'), refused('127.0.0.1')], 'connect failed'),
  });
}

/** A base URL on 127.0.0.1 where nothing listens (a port just released), for "server down" cases. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return `http://127.0.0.1:${port}`;
}
