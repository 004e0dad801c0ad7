/** `allowFrom` and `rateLimit` on mappings and on `hooks.routes` (src/config/schema/limits.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertIssue, parse } from './helpers.js';

const mapping = (extra: Record<string, unknown>) => ({
  hooks: { mappings: [{ match: { path: 'gh' }, messageTemplate: 'x', ...extra }] },
});

describe('config: per-route limits', () => {
  it('none by default: no allowFrom or rateLimit on a mapping, hooks.routes empty', () => {
    const c = parse(mapping({}));
    assert.equal(c.hooks.mappings[0]!.allowFrom, undefined);
    assert.equal(c.hooks.mappings[0]!.rateLimit, undefined);
    assert.deepEqual(c.hooks.routes, {});
  });
  it('accepts addresses and blocks of both families, trimmed', () => {
    const c = parse({
      ...mapping({
        allowFrom: [' 203.0.113.0/24 ', '2001:db8::/32', '198.51.100.7'],
        rateLimit: { perMinute: 30, burst: 5 },
      }),
    });
    assert.deepEqual(c.hooks.mappings[0]!.allowFrom, ['203.0.113.0/24', '2001:db8::/32', '198.51.100.7']);
    assert.deepEqual(c.hooks.mappings[0]!.rateLimit, { perMinute: 30, burst: 5 });
  });
  it('an invalid CIDR is an error at its key path', () => {
    assertIssue(
      mapping({ allowFrom: ['10.0.0.0/8', '10.0.0.0/40'] }),
      'hooks.mappings[0].allowFrom[1]',
      /prefix length after \/ must be 0 to 32/,
    );
    assertIssue(
      mapping({ allowFrom: ['github.com'] }),
      'hooks.mappings[0].allowFrom[0]',
      /"github.com" is not an IP address or a CIDR block/,
    );
    assertIssue(
      { hooks: { routes: { agent: { allowFrom: ['::1/200'] } } } },
      'hooks.routes.agent.allowFrom[0]',
      /0 to 128/,
    );
  });
  it('an empty allowFrom is an error (it would refuse everyone)', () => {
    assertIssue(mapping({ allowFrom: [] }), 'hooks.mappings[0].allowFrom', /refuse every client/);
  });
  it('rateLimit needs a positive perMinute and a positive integer burst; no unknown keys', () => {
    assertIssue(mapping({ rateLimit: { perMinute: 0, burst: 1 } }), 'hooks.mappings[0].rateLimit.perMinute');
    assertIssue(mapping({ rateLimit: { perMinute: 10, burst: 1.5 } }), 'hooks.mappings[0].rateLimit.burst');
    assertIssue(mapping({ rateLimit: { perMinute: 10 } }), 'hooks.mappings[0].rateLimit.burst');
    assertIssue(
      { hooks: { routes: { wake: { rateLimit: { perMinute: 1, burst: 1, perHour: 3 } } } } },
      'hooks.routes.wake.rateLimit',
    );
    assertIssue({ hooks: { routes: { gmail: {} } } }, 'hooks.routes');
  });
  it('hooks.routes.wake / agent take both keys', () => {
    const c = parse({
      hooks: { routes: { wake: { rateLimit: { perMinute: 0.5, burst: 1 } }, agent: { allowFrom: ['127.0.0.1'] } } },
    });
    assert.deepEqual(c.hooks.routes.wake, { rateLimit: { perMinute: 0.5, burst: 1 } });
    assert.deepEqual(c.hooks.routes.agent, { allowFrom: ['127.0.0.1'] });
  });
});
