import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { describe, it, mock } from 'node:test';
import { extractToken, isExpired, TOKEN_WINDOW_BYTES, TokenSet, tokenSetOf } from '../../src/ingress/auth.js';

describe('extractToken', () => {
  it('reads Authorization: Bearer, case-insensitively, trimmed', () => {
    assert.equal(extractToken({ authorization: 'Bearer abc' }), 'abc');
    assert.equal(extractToken({ authorization: 'bearer abc' }), 'abc');
    assert.equal(extractToken({ authorization: 'BEARER abc' }), 'abc');
    assert.equal(extractToken({ authorization: 'BeArEr   abc  ' }), 'abc');
  });

  it('lets Bearer win over x-hookgate-token and x-openclaw-token', () => {
    assert.equal(
      extractToken({
        authorization: 'Bearer from-bearer',
        'x-hookgate-token': 'from-hookgate',
        'x-openclaw-token': 'from-openclaw',
      }),
      'from-bearer',
    );
    // even when the bearer token is wrong and a header is right: the bearer is what is checked
    assert.equal(extractToken({ authorization: 'Bearer wrong', 'x-hookgate-token': 'right' }), 'wrong');
  });

  it('prefers x-hookgate-token over x-openclaw-token, and accepts x-openclaw-token alone', () => {
    assert.equal(extractToken({ 'x-hookgate-token': 'hg', 'x-openclaw-token': 'oc' }), 'hg');
    assert.equal(extractToken({ 'x-openclaw-token': ' oc ' }), 'oc');
    assert.equal(extractToken({ 'x-hookgate-token': ['first', 'second'] }), 'first');
  });

  it('treats blank values as absent', () => {
    assert.equal(extractToken({ authorization: 'Bearer    ', 'x-hookgate-token': 'hg' }), 'hg');
    assert.equal(extractToken({ authorization: 'Bearer ', 'x-hookgate-token': ' ', 'x-openclaw-token': 'oc' }), 'oc');
    assert.equal(extractToken({ authorization: '', 'x-hookgate-token': '', 'x-openclaw-token': '  ' }), undefined);
    assert.equal(extractToken({}), undefined);
  });

  it('ignores other authorization schemes and a missing space', () => {
    assert.equal(extractToken({ authorization: 'Basic dXNlcjpwYXNz' }), undefined);
    assert.equal(extractToken({ authorization: 'Basic dXNlcjpwYXNz', 'x-hookgate-token': 'hg' }), 'hg');
    assert.equal(extractToken({ authorization: 'Bearerabc' }), undefined);
    assert.equal(extractToken({ authorization: 'abc' }), undefined);
  });
});

/** One token alone, as `hooks.token` by itself is. */
const single = (token: string) => new TokenSet([{ id: 'default', token }]);
const tokenMatches = (presented: string | undefined, set: TokenSet | undefined) =>
  set !== undefined && set.find(presented) !== undefined;

describe('one token (hooks.token alone)', () => {
  const expected = single('s3cret-token-0123456789');

  it('accepts the right token and refuses wrong or missing ones', () => {
    assert.equal(tokenMatches('s3cret-token-0123456789', expected), true);
    assert.equal(tokenMatches('s3cret-token-012345678', expected), false);
    assert.equal(tokenMatches('s3cret-token-01234567890', expected), false);
    assert.equal(tokenMatches('S3CRET-TOKEN-0123456789', expected), false);
    assert.equal(
      tokenMatches('s3cret-token-0123456789\u0000', expected),
      false,
      'a NUL after the token is not padding',
    );
    assert.equal(tokenMatches('', expected), false);
    assert.equal(tokenMatches('x'.repeat(100_000), expected), false);
    assert.equal(tokenMatches(undefined, expected), false);
  });

  it('refuses everything when no token is configured', () => {
    assert.equal(tokenMatches('anything', undefined), false);
    assert.equal(tokenMatches(undefined, undefined), false);
    assert.equal(tokenMatches('', undefined), false);
  });

  it('compares multi-byte tokens by their UTF-8 bytes', () => {
    const token = single('clé-ünïcødé-🔑');
    assert.equal(tokenMatches('clé-ünïcødé-🔑', token), true);
    assert.equal(tokenMatches('cle-unicode-🔑', token), false);
    assert.equal(tokenMatches('clé-ünïcødé-', token), false);
  });

  it('handles tokens longer than one window, and presented tokens that overflow it', () => {
    const long = 'L'.repeat(TOKEN_WINDOW_BYTES + 10);
    const token = single(long);
    assert.equal(tokenMatches(long, token), true);
    assert.equal(tokenMatches(long.slice(0, -1), token), false);
    assert.equal(tokenMatches(`${long}L`, token), false);
    const exact = single('E'.repeat(TOKEN_WINDOW_BYTES));
    assert.equal(tokenMatches('E'.repeat(TOKEN_WINDOW_BYTES), exact), true);
    assert.equal(
      tokenMatches('E'.repeat(TOKEN_WINDOW_BYTES + 1), exact),
      false,
      'a longer token with the same first window',
    );
  });

  it('matches by bytes at the window edge, where a multi-byte character is cut and the rest of the window is reused', () => {
    // Secrets and presented tokens ending 0 to 5 bytes short of, on or past the window's edge, in characters of
    // 1 to 4 bytes: a token matches exactly when its bytes are a secret's, whatever an earlier token left behind.
    const chars = ['a', 'é', '€', '🔑'];
    const edge: string[] = [];
    for (const c of chars)
      for (let prefix = TOKEN_WINDOW_BYTES - 8; prefix <= TOKEN_WINDOW_BYTES; prefix++)
        edge.push('p'.repeat(prefix) + c, `${'p'.repeat(prefix)}${c}${c}`);
    edge.push('p'.repeat(TOKEN_WINDOW_BYTES - 1));
    for (const secret of edge) {
      const set = single(secret);
      for (const presented of edge)
        assert.equal(
          tokenMatches(presented, set),
          Buffer.from(presented).equals(Buffer.from(secret)),
          `${Buffer.byteLength(presented)}-byte token against a ${Buffer.byteLength(secret)}-byte secret`,
        );
      // A long token first, then a short one: what the long one wrote past the short one must not count.
      assert.equal(tokenMatches(secret, set), true);
      assert.equal(tokenMatches('p', set), false);
    }
  });

  it('compares one fixed-width window with timingSafeEqual, whatever the presented length', (t) => {
    const spy = mock.method(crypto, 'timingSafeEqual');
    syncBuiltinESMExports();
    t.after(() => {
      spy.mock.restore();
      syncBuiltinESMExports();
    });
    for (const presented of ['short', 's3cret-token-0123456789', 'y'.repeat(5000)]) tokenMatches(presented, expected);
    assert.equal(spy.mock.callCount(), 3);
    for (const call of spy.mock.calls) {
      const [a, b] = call.arguments as unknown as [Buffer, Buffer];
      assert.equal(a.length, TOKEN_WINDOW_BYTES);
      assert.equal(b.length, TOKEN_WINDOW_BYTES);
    }
  });
});

describe('TokenSet: several tokens (hooks.tokens, admin.tokens)', () => {
  const now = Date.parse('2026-06-01T00:00:00Z');
  const set = new TokenSet([
    { id: 'default', token: 's3cret-token-0123456789' },
    { id: 'ci', token: 'ci-token-abcdefghijklmnop' },
    { id: 'old', token: 'old-token-abcdefghijklmnop', notAfter: now },
    { id: 'long', token: 'L'.repeat(TOKEN_WINDOW_BYTES + 10) },
  ]);

  it('finds each listed token by its id; an expired one is found but not accepted; nothing else matches', () => {
    assert.equal(set.size, 4);
    assert.equal(set.accept('s3cret-token-0123456789', now), 'default');
    assert.equal(set.accept('ci-token-abcdefghijklmnop', now), 'ci');
    assert.equal(set.accept('L'.repeat(TOKEN_WINDOW_BYTES + 10), now), 'long');
    assert.equal(set.find('old-token-abcdefghijklmnop')?.id, 'old');
    assert.equal(isExpired(set.find('old-token-abcdefghijklmnop')!, now - 1), false, 'valid until notAfter');
    assert.equal(set.accept('old-token-abcdefghijklmnop', now), undefined, 'refused from notAfter on');
    for (const bad of [
      undefined,
      '',
      'ci-token-abcdefghijklmno',
      'ci-token-abcdefghijklmnopq',
      'L'.repeat(TOKEN_WINDOW_BYTES + 11),
      'CI-TOKEN-ABCDEFGHIJKLMNOP',
    ]) {
      assert.equal(set.find(bad), undefined, String(bad));
    }
    assert.equal(new TokenSet([]).find('anything'), undefined);
  });

  it('tokenSetOf: hooks.token is "default", then the list in order', () => {
    const s = tokenSetOf({ token: 'single-0123456789abc', tokens: [{ id: 'b', token: 'listed-0123456789abc' }] });
    assert.equal(s.accept('single-0123456789abc', 0), 'default');
    assert.equal(s.accept('listed-0123456789abc', 0), 'b');
    assert.equal(tokenSetOf({}).size, 0);
  });

  it('compares every token, one window as wide as the widest, whichever matches (no early exit)', (t) => {
    const spy = mock.method(crypto, 'timingSafeEqual');
    syncBuiltinESMExports();
    t.after(() => {
      spy.mock.restore();
      syncBuiltinESMExports();
    });
    const presented = [
      's3cret-token-0123456789',
      'ci-token-abcdefghijklmnop',
      'L'.repeat(TOKEN_WINDOW_BYTES + 10),
      'wrong',
      'y'.repeat(5000),
    ];
    for (const p of presented) set.find(p);
    assert.equal(
      spy.mock.callCount(),
      presented.length * 4,
      'four compares per request, whether the first, the last or none matched',
    );
    for (const call of spy.mock.calls) {
      const [a, b] = call.arguments as unknown as [Buffer, Buffer];
      assert.equal(a.length, 2 * TOKEN_WINDOW_BYTES);
      assert.equal(b.length, 2 * TOKEN_WINDOW_BYTES);
    }
  });
});
