import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bearerToken, onePathSegment, readCapped } from '../src/http-util.js';

/** A body stream that hands out `chunks` and records whether it was cancelled. */
function body(chunks: string[]): {
  stream: ReadableStream<Uint8Array>;
  cancelled: () => boolean;
  pulled: () => number;
} {
  let i = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < chunks.length) controller.enqueue(new TextEncoder().encode(chunks[i++]!));
      else controller.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled, pulled: () => i };
}

describe('readCapped', () => {
  it('reads a body under the limit whole', async () => {
    const b = body(['{"ok":', 'true}']);
    assert.deepEqual(await readCapped(b.stream, 100), { text: '{"ok":true}', truncated: false });
    assert.equal(b.cancelled(), false);
  });

  it('keeps exactly `limit` bytes of a longer body, cancels the stream and reads no further', async () => {
    const b = body(['aaaa', 'bbbb', 'cccc', 'dddd']);
    assert.deepEqual(await readCapped(b.stream, 6), { text: 'aaaabb', truncated: true });
    assert.equal(b.cancelled(), true);
    assert.ok(b.pulled() <= 3, `pulled ${b.pulled()} chunks`);
  });

  it('reads no body as empty', async () => {
    assert.deepEqual(await readCapped(null, 10), { text: '', truncated: false });
  });
});

describe('onePathSegment', () => {
  it('percent-encodes a value into exactly one segment and refuses the ones a URL parser would resolve or drop', () => {
    assert.equal(onePathSegment('1100000000000000001'), '1100000000000000001');
    assert.equal(onePathSegment('19:a@thread.tacv2'), '19%3Aa%40thread.tacv2');
    assert.equal(onePathSegment('a/b?c#d'), 'a%2Fb%3Fc%23d');
    assert.equal(onePathSegment('...'), '...', 'three dots are a name, not a step');
    for (const v of ['', '.', '..']) assert.equal(onePathSegment(v), undefined, JSON.stringify(v));
    for (const v of ['a/b', '%2e%2e', '..%2F', 'x y']) {
      const url = new URL(`https://api.example/v1/channels/${onePathSegment(v)}/messages`);
      assert.equal(url.pathname.split('/').length, 5, `${v} → ${url.pathname}`);
    }
  });
});

describe('bearerToken', () => {
  it('the token of `Bearer <token>` (the scheme in any case, spaces around the token trimmed); nothing for anything else', () => {
    assert.equal(bearerToken('Bearer abc'), 'abc');
    assert.equal(bearerToken('bearer   abc  '), 'abc');
    assert.equal(bearerToken('BEARER a b'), 'a b');
    for (const v of [undefined, '', 'Bearer', 'Bearer ', 'Bearer    ', 'Basic YWJj', 'Bearerabc', 'abc']) {
      assert.equal(bearerToken(v), undefined, String(v));
    }
  });
});
