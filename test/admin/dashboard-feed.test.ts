/**
 * The dashboard's SSE reader (dashboard/feed.js) under Node's own fetch streams: the text format split at awkward
 * chunk boundaries (a CRLF across two chunks, an event across three), comments, multi-line data, `retry`, and the
 * reconnection that sends the token header and `Last-Event-ID`, ending on a 401.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../support/paths.js';

interface FeedModule {
  startFeed(opts: {
    token: () => string;
    onEvent: (type: string, data: unknown, id: string | null) => void;
    onStatus: (state: string, info?: string) => void;
    onOpen?: () => void;
  }): { stop(): void };
}

// A plain browser module: loaded by URL so the test program does not type-check it.
const load = () => import(pathToFileURL(join(ROOT, 'dashboard/feed.js')).href) as Promise<FeedModule>;

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    async pull(controller) {
      const next = chunks.shift();
      if (next === undefined) controller.close();
      else {
        await new Promise((r) => setTimeout(r, 2));
        controller.enqueue(enc.encode(next));
      }
    },
  });
}

describe('dashboard feed reader', () => {
  it('parses events across chunk boundaries and reconnects with the token header and Last-Event-ID', async () => {
    const { startFeed } = await load();
    const requests: Array<{ url: string; headers: Record<string, string> }> = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = (async (url: string, init: RequestInit) => {
      requests.push({ url, headers: init.headers as Record<string, string> });
      if (requests.length === 1) {
        return new Response(
          streamOf([
            'retry: 10\r\n: hello\r\n\r',
            '\nid: 1\r\nevent: received\r\ndata: {"type":"received",',
            '"path":"/hooks/wake"}\r\n\r\n',
            'id: 2\ndata: {"type":"run",\ndata: "runId":"r1"}\n\n',
            'data: not json\n\n',
            'id: 3\nevent: heartbeat\ndata: {"type":"heartbeat"}\n\nid: 4\ndata: {"partial":',
          ]),
          { status: 200, headers: { 'content-type': 'text/event-stream' } },
        );
      }
      return new Response('{"ok":false}', { status: 401 });
    }) as typeof fetch;
    try {
      const events: Array<[string, unknown, string | null]> = [];
      const statuses: string[] = [];
      let opened = 0;
      await new Promise<void>((resolve) => {
        startFeed({
          token: () => 'tok-123',
          onEvent: (type, data, id) => events.push([type, data, id]),
          onOpen: () => opened++,
          onStatus: (s) => {
            statuses.push(s);
            if (s === 'refused') resolve();
          },
        });
      });
      assert.deepEqual(events, [
        ['received', { type: 'received', path: '/hooks/wake' }, '1'],
        ['run', { type: 'run', runId: 'r1' }, '2'],
        ['heartbeat', { type: 'heartbeat' }, '3'],
      ]);
      assert.equal(opened, 1);
      assert.deepEqual(statuses, ['connecting', 'live', 'retrying', 'connecting', 'refused']);
      assert.equal(requests.length, 2);
      for (const r of requests) {
        assert.equal(r.url, '/api/v1/events', 'the token is never in the URL');
        assert.equal(r.headers.authorization, 'Bearer tok-123');
      }
      assert.equal(requests[0]!.headers['last-event-id'], undefined);
      // The unfinished event 4 was never dispatched, so the resume point is 3.
      assert.equal(requests[1]!.headers['last-event-id'], '3');
    } finally {
      globalThis.fetch = realFetch;
    }
  });
});
