/** Which route's limits apply before the body (src/ingress/route-limits.ts), and buckets across reloads. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FORBIDDEN, type Gate, RouteLimit, RouteLimits, UNDECIDED } from '../../src/ingress/route-limits.js';
import { parse } from '../config/helpers.js';

const compile = (hooks: Record<string, unknown>, previous: RouteLimits | null = null, now = 0) =>
  RouteLimits.compile(parse({ hooks }).hooks, previous, now);

const keyOf = (g: Gate) => (g instanceof RouteLimit ? g.key : g);

describe('RouteLimits', () => {
  it('is null when no route has a limit (the request path then only checks for null)', () => {
    assert.equal(compile({ mappings: [{ match: { path: 'a' }, messageTemplate: 'x' }] }), null);
  });

  it('/wake and /agent: hooks.routes', () => {
    const l = compile({
      routes: { wake: { rateLimit: { perMinute: 60, burst: 1 } }, agent: { allowFrom: ['10.0.0.0/8'] } },
    })!;
    assert.equal(keyOf(l.gate('wake', {}, '1.2.3.4')), 'route:wake');
    assert.equal(l.gate('agent', {}, '1.2.3.4'), FORBIDDEN);
    assert.equal(l.gate('agent', {}, '10.9.9.9'), null); // allowed, and no bucket
    assert.equal(l.gate('', {}, '1.2.3.4'), null);
    assert.equal(l.gate('other', {}, '1.2.3.4'), null);
  });

  it('a mapping decided by path and headers before the body', () => {
    const l = compile({
      mappings: [
        {
          id: 'pr',
          match: { path: 'gh', headers: { 'x-github-event': 'pull_request' } },
          messageTemplate: 'x',
          rateLimit: { perMinute: 1, burst: 1 },
        },
        { id: 'gh', match: { path: 'gh' }, messageTemplate: 'x', allowFrom: ['192.30.252.0/22'] },
        { id: 'any', messageTemplate: 'x', allowFrom: ['2001:db8::/32'], rateLimit: { perMinute: 1, burst: 1 } },
      ],
    })!;
    assert.equal(keyOf(l.gate('gh', { 'x-github-event': 'pull_request' }, '1.2.3.4')), 'mapping:pr');
    assert.equal(l.gate('gh', { 'x-github-event': 'push' }, '1.2.3.4'), FORBIDDEN);
    assert.equal(l.gate('gh', {}, '192.30.252.1'), null);
    assert.equal(l.gate('other', {}, '1.2.3.4'), FORBIDDEN); // the wildcard mapping takes every other path
    assert.equal(keyOf(l.gate('other', {}, '2001:db8::5')), 'mapping:any');
  });

  it('a mapping told apart by match.source is decided after the body (UNDECIDED), refused early only if no candidate allows', () => {
    const l = compile({
      mappings: [
        { id: 'a', match: { path: 'p', source: 'a' }, messageTemplate: 'x', allowFrom: ['10.0.0.0/8'] },
        {
          id: 'b',
          match: { path: 'p' },
          messageTemplate: 'x',
          allowFrom: ['172.16.0.0/12'],
          rateLimit: { perMinute: 1, burst: 1 },
        },
        { id: 'c', match: { path: 'q', source: 'c' }, messageTemplate: 'x', allowFrom: ['10.0.0.0/8'] },
      ],
    })!;
    assert.equal(l.gate('p', {}, '10.1.1.1'), UNDECIDED);
    assert.equal(l.gate('p', {}, '172.16.0.1'), UNDECIDED);
    assert.equal(l.gate('p', {}, '8.8.8.8'), FORBIDDEN); // neither a nor b would take it
    assert.equal(l.gate('q', {}, '8.8.8.8'), UNDECIDED); // another source may match nothing (404) or a preset
    assert.equal(l.forMapping('b')?.key, 'mapping:b');
    assert.ok(!l.forMapping('a')!.allows('172.16.0.1'));
    assert.equal(l.forMapping(null), undefined);
  });

  it("a sender preset's limits apply to its whole path, before the body, after the custom mappings on it", () => {
    const l = compile({
      mappings: [
        {
          id: 'deploys',
          match: { path: 'github', headers: { 'x-github-event': 'deployment' } },
          messageTemplate: 'x',
          signature: { scheme: 'github', secret: 's' },
        },
      ],
      presets: [{ use: 'github', secret: 's', allowFrom: ['192.30.252.0/22'], rateLimit: { perMinute: 60, burst: 2 } }],
    })!;
    assert.equal(l.gate('github', { 'x-github-event': 'pull_request' }, '8.8.8.8'), FORBIDDEN);
    assert.equal(keyOf(l.gate('github', { 'x-github-event': 'pull_request' }, '192.30.252.7')), 'mapping:github');
    assert.equal(keyOf(l.gate('github', { 'x-github-event': 'anything-else' }, '192.30.252.7')), 'mapping:github');
    assert.equal(
      l.gate('github', { 'x-github-event': 'deployment' }, '8.8.8.8'),
      null,
      'the custom mapping comes first and has no limits',
    );
    assert.equal(l.forMapping('github')?.key, 'mapping:github');
  });

  it('matches on headers as the router does: credential headers never match', () => {
    const l = compile({
      mappings: [
        { match: { path: 'p', headers: { authorization: 'x' } }, messageTemplate: 'x', allowFrom: ['10.0.0.0/8'] },
      ],
    })!;
    assert.equal(l.gate('p', { authorization: 'x' }, '1.1.1.1'), null);
  });

  it('keeps a bucket across a reload when its route and limit are unchanged; a changed limit starts full', () => {
    const hooks = (burst: number) => ({
      routes: { wake: { rateLimit: { perMinute: 60, burst: 2 } } },
      mappings: [{ id: 'm', match: { path: 'm' }, messageTemplate: 'x', rateLimit: { perMinute: 60, burst } }],
    });
    const first = compile(hooks(2))!;
    first.bucket('route:wake')!.take(0);
    first.bucket('mapping:m')!.take(0);
    const same = compile(hooks(2), first)!;
    assert.equal(same.bucket('route:wake'), first.bucket('route:wake'));
    assert.equal(same.bucket('mapping:m')!.available(0), 1);
    const changed = compile(hooks(3), same)!;
    assert.equal(changed.bucket('route:wake')!.available(0), 1);
    assert.equal(changed.bucket('mapping:m')!.available(0), 3);
    assert.equal(compile({}, changed), null);
  });
});
