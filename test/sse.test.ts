import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type SseMessage, SseParser } from '../src/sse.js';

function parse(chunks: string[]): { messages: SseMessage[]; comments: string[] } {
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  const p = new SseParser(
    (m) => messages.push(m),
    (c) => comments.push(c),
  );
  for (const c of chunks) p.push(c);
  return { messages, comments };
}

describe('SseParser', () => {
  it('reads id, event and data; a blank line ends a message; without event it is "message"', () => {
    const { messages } = parse(['id: a-1\nevent: run\ndata: {"x":1}\n\ndata: plain\n\n']);
    assert.deepEqual(messages, [
      { id: 'a-1', event: 'run', data: '{"x":1}' },
      { id: undefined, event: 'message', data: 'plain' },
    ]);
  });

  it('lines split across chunks, CRLF line ends, several data lines joined by \\n', () => {
    const text = 'id: 7\r\nevent: received\r\ndata: one\r\ndata: two\r\n\r\n';
    for (let cut = 1; cut < text.length; cut++) {
      const { messages } = parse([text.slice(0, cut), text.slice(cut)]);
      assert.deepEqual(messages, [{ id: '7', event: 'received', data: 'one\ntwo' }], `cut at ${cut}`);
    }
  });

  it('comments are reported, not dispatched; a message without data is dropped; fields reset per message', () => {
    const { messages, comments } = parse([': keep-alive\n\nretry: 2000\n\nid: 1\nevent: reset\n\ndata: after\n\n']);
    assert.deepEqual(comments, ['keep-alive']);
    assert.deepEqual(messages, [{ id: undefined, event: 'message', data: 'after' }]);
  });
});
