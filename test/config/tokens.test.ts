/** Token rotation: `hooks.tokens` and `admin.tokens` (schema/tokens.ts, checks/tokens.ts), with their messages. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clientToken, parseInstant } from '../../src/config/schema/tokens.js';
import { TOKEN } from '../support/token.js';
import { assertIssue, parse } from './helpers.js';

const A = 'token-a-0123456789abcdef';
const B = 'token-b-0123456789abcdef';

describe('hooks.tokens and admin.tokens', () => {
  it('a list alone is enough for hooks.enabled and admin.enabled; hooks.token alone keeps working', () => {
    const c = parse({
      hooks: { enabled: true, tokens: [{ id: 'ci', token: A }] },
      admin: { enabled: true, tokens: [{ id: 'ops', token: B }] },
    });
    assert.deepEqual(c.hooks.tokens, [{ id: 'ci', token: A }]);
    assert.equal(c.hooks.token, undefined);
    assert.deepEqual(c.admin.tokens, [{ id: 'ops', token: B }]);
    const single = parse({ hooks: { enabled: true, token: TOKEN } });
    assert.equal(single.hooks.tokens, undefined, 'no list by default');
    assertIssue({ hooks: { enabled: true, tokens: [] } }, 'hooks.token', 'hooks.enabled requires hooks.token');
  });

  it('notAfter: an ISO date-time with a zone, or epoch milliseconds; a local time or nonsense is refused at its key path', () => {
    const c = parse({
      hooks: {
        enabled: true,
        tokens: [
          { id: 'a', token: A, notAfter: '2030-01-01T00:00:00+01:00' },
          { id: 'b', token: B, notAfter: 1893456000000 },
        ],
      },
    });
    assert.deepEqual(
      c.hooks.tokens?.map((t) => t.notAfter),
      [Date.parse('2029-12-31T23:00:00Z'), 1893456000000],
    );
    assertIssue(
      { hooks: { enabled: true, tokens: [{ id: 'a', token: A, notAfter: '2030-01-01T00:00:00' }] } },
      'hooks.tokens[0].notAfter',
      /expected an ISO date-time with a zone/,
    );
    assertIssue(
      { hooks: { enabled: true, tokens: [{ id: 'a', token: A, notAfter: 'soon' }] } },
      'hooks.tokens[0].notAfter',
      /expected an ISO date-time/,
    );
    assert.equal(parseInstant(-1), undefined);
  });

  it('the token takes every secret form: { env }, { file } and ${VAR}', () => {
    const c = parse(
      {
        hooks: {
          enabled: true,
          tokens: [
            { id: 'e', token: { env: 'HG_T1' } },
            { id: 'v', token: '${HG_T2}' },
          ],
        },
      },
      { HG_T1: A, HG_T2: B },
    );
    assert.deepEqual(
      c.hooks.tokens?.map((t) => t.token),
      [A, B],
    );
    assertIssue(
      { hooks: { enabled: true, tokens: [{ id: 'e', token: { env: 'HG_UNSET' } }] } },
      'hooks.tokens[0].token',
      'environment variable HG_UNSET is not set',
    );
  });

  it('ids: unique, plain, and "default" is taken by hooks.token while it is set; a secret listed twice is refused (never quoted)', () => {
    assertIssue(
      {
        hooks: {
          enabled: true,
          tokens: [
            { id: 'x', token: A },
            { id: 'x', token: B },
          ],
        },
      },
      'hooks.tokens[1].id',
      'duplicate id "x" (also hooks.tokens[0])',
    );
    assertIssue(
      { hooks: { enabled: true, token: TOKEN, tokens: [{ id: 'default', token: A }] } },
      'hooks.tokens[0].id',
      '"default" is the id of hooks.token; choose another id',
    );
    parse({ hooks: { enabled: true, tokens: [{ id: 'default', token: A }] } });
    assertIssue(
      { hooks: { enabled: true, tokens: [{ id: 'has space', token: A }] } },
      'hooks.tokens[0].id',
      /must be 1-64 letters/,
    );
    assertIssue(
      { hooks: { enabled: true, token: A, tokens: [{ id: 'y', token: A }] } },
      'hooks.tokens[0].token',
      'the same token as hooks.token: each entry needs its own',
    );
    assertIssue(
      {
        admin: {
          enabled: true,
          tokens: [
            { id: 'y', token: A },
            { id: 'z', token: A },
          ],
        },
      },
      'admin.tokens[1].token',
      'the same token as admin.tokens[0]: each entry needs its own',
    );
    assertIssue({ admin: { enabled: true, tokens: [{ id: 'y', token: A, extra: 1 }] } }, 'admin.tokens[0]');
  });

  it('warnings: a short listed token, an expired one, all expired, an admin token that is also a hook token', () => {
    const c = parse({
      hooks: { enabled: true, tokens: [{ id: 's', token: 'short', notAfter: 1000 }] },
      admin: { enabled: true, token: B, tokens: [{ id: 'h', token: 'short' }] },
    });
    assert.ok(
      c.warnings.includes(
        'hooks.tokens[0].token (id "s") is shorter than 16 characters: use `hookgate token` for a strong one',
      ),
      c.warnings.join('\n'),
    );
    assert.ok(
      c.warnings.includes('hooks.tokens[0] (id "s") expired at 1970-01-01T00:00:01.000Z and is refused: remove it'),
    );
    assert.ok(
      c.warnings.includes(
        'every entry of hooks.tokens has expired: every request is refused with 401 until a token is added',
      ),
    );
    assert.ok(
      c.warnings.some((w) => w.startsWith('an admin token (admin.token or admin.tokens) is also a hook token')),
    );
    assert.ok(!c.warnings.some((w) => w.includes('short"') || w.includes(B)), 'no token in a warning');
  });

  it('a weak admin token on a non-loopback bind is refused with its key path and how to make one; on loopback it is a warning', () => {
    const weak = 'weak-admin-1';
    const how =
      /^shorter than 16 characters, and admin.bind \(0\.0\.0\.0\) is not loopback: make a strong one with `hookgate token` \(or `openssl rand -hex 32`\)/;
    const issues = assertIssue({ admin: { enabled: true, bind: '0.0.0.0', token: weak } }, 'admin.token', how);
    assert.ok(!JSON.stringify(issues).includes(weak), 'no token in the message');
    assertIssue(
      { admin: { enabled: true, bind: '::', token: A, tokens: [{ id: 'ops', token: weak }] } },
      'admin.tokens[0].token',
      /^\(id "ops"\) shorter than 16 characters, and admin.bind \(::\) is not loopback/,
    );
    assertIssue({ admin: { enabled: true, bind: '192.168.1.10', token: weak } }, 'admin.token');
    for (const bind of ['127.0.0.1', '::1', 'localhost']) {
      const c = parse({ admin: { enabled: true, bind, token: weak, tokens: [{ id: 'ops', token: `${weak}x` }] } });
      assert.ok(
        c.warnings.includes('admin.token is shorter than 16 characters: use `hookgate token` for a strong one'),
        `${bind}: ${c.warnings.join('\n')}`,
      );
      assert.ok(
        c.warnings.includes(
          'admin.tokens[0].token (id "ops") is shorter than 16 characters: use `hookgate token` for a strong one',
        ),
        c.warnings.join('\n'),
      );
    }
    // A strong token anywhere, and a weak one while the admin listener is off, are fine.
    assert.equal(parse({ admin: { enabled: true, bind: '0.0.0.0', token: A } }).admin.bind, '0.0.0.0');
    assert.equal(parse({ admin: { enabled: false, bind: '0.0.0.0', token: weak } }).admin.enabled, false);
  });

  it('clientToken (hookgate send, tail): the single token, else the newest unexpired entry', () => {
    assert.deepEqual(clientToken('hooks', { token: A, tokens: [{ id: 'b', token: B }] }, 0), {
      token: A,
      key: 'hooks.token',
    });
    assert.deepEqual(
      clientToken(
        'hooks',
        {
          tokens: [
            { id: 'a', token: A },
            { id: 'b', token: B, notAfter: 10 },
          ],
        },
        10,
      ),
      { token: A, key: 'hooks.tokens[0] (id "a")' },
    );
    assert.equal(clientToken('admin', { tokens: [{ id: 'a', token: A, notAfter: 5 }] }, 10), undefined);
  });
});
