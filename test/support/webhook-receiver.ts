/**
 * A local HTTP receiver for webhook tests: it verifies each request the way a Standard Webhooks consumer does
 * (https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md) and answers with
 * scripted responses.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Whether the signature verified against the receiver's secret, within the timestamp tolerance. */
  verified: boolean;
  /** Why verification failed, when it did. */
  failure?: string;
}

export interface ScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Answer only after this long (to provoke client timeouts). */
  delayMs?: number;
}

/**
 * Standard Webhooks verification: the key is the base64 after `whsec_`; the signed content is `id.timestamp.body`;
 * the header may hold several space-separated `v1,<base64>` signatures, any of which may match (constant-time);
 * the timestamp must be within `toleranceSeconds` of now.
 */
export function verifyStandardWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
  toleranceSeconds = 300,
): { ok: true } | { ok: false; why: string } {
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const id = one('webhook-id');
  const ts = one('webhook-timestamp');
  const sigs = one('webhook-signature');
  if (!id || !ts || !sigs) return { ok: false, why: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  if (!/^\d+$/.test(ts)) return { ok: false, why: 'bad timestamp' };
  if (Math.abs(nowSeconds - Number(ts)) > toleranceSeconds) return { ok: false, why: 'timestamp outside tolerance' };
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest();
  for (const sig of sigs.split(' ')) {
    const [version, value] = sig.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const got = Buffer.from(value, 'base64');
    if (got.length === expected.length && timingSafeEqual(got, expected)) return { ok: true };
  }
  return { ok: false, why: 'no matching signature' };
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Responses to give, in order; when empty, 200. */
  script: ScriptedResponse[];
  close(): Promise<void>;
}

export async function startWebhookReceiver(secret: string): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const script: ScriptedResponse[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const v = verifyStandardWebhook(secret, req.headers, body);
      received.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        verified: v.ok,
        ...(v.ok ? {} : { failure: v.why }),
      });
      const answer = script.shift() ?? { status: v.ok ? 200 : 401 };
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    script,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
