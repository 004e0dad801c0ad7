import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { type AdminClientPolicy, AdminAuthGate } from '../../src/admin/auth-gate.js';
import { AdminError } from '../../src/errors.js';
import type { Logger } from '../../src/log.js';
import { ClientIpResolver } from '../../src/net/client-ip.js';

const RIGHT = 'the-admin-token-0123456789abcdef';
const LIMIT = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 30, maxTrackedClients: 100 };

function setup(
  policy: () => AdminClientPolicy = () => ({ clientIps: new ClientIpResolver([]), authFailureLimit: LIMIT }),
) {
  const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
  const logger = {
    warn: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }),
  } as unknown as Logger;
  const records: Array<{ kind: string; actor: string; detail: Record<string, unknown> }> = [];
  const audit = {
    record: (kind: string, actor: string, detail: Record<string, unknown>) =>
      void records.push({ kind, actor, detail }),
  };
  const gate = new AdminAuthGate((t) => (t === RIGHT ? 'default' : undefined), policy, logger, audit as never);
  const req = (ip: string, token?: string, xff?: string) =>
    ({
      socket: { remoteAddress: ip },
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(xff ? { 'x-forwarded-for': xff } : {}) },
    }) as unknown as IncomingMessage;
  const outcome = (r: IncomingMessage, now: number) => {
    try {
      gate.check(r, now);
      return { status: 200 };
    } catch (err) {
      assert.ok(err instanceof AdminError);
      return { status: err.status, code: err.code, retryAfter: err.headers?.['retry-after'] };
    }
  };
  return { gate, lines, records, req, outcome };
}

describe('AdminAuthGate', () => {
  it('maxFailures wrong tokens lock the address: 429 with Retry-After even with the right token, until the lockout ends', () => {
    const { lines, records, req, outcome } = setup();
    for (let i = 0; i < 3; i++)
      assert.deepEqual(outcome(req('203.0.113.9', `guess-${i}`), 1000), {
        status: 401,
        code: 'unauthorized',
        retryAfter: undefined,
      });
    assert.deepEqual(outcome(req('203.0.113.9', 'guess-4'), 2000), {
      status: 429,
      code: 'rate_limited',
      retryAfter: '29',
    });
    assert.deepEqual(
      outcome(req('203.0.113.9', RIGHT), 2000),
      { status: 429, code: 'rate_limited', retryAfter: '29' },
      'a lockout stops guessing',
    );
    assert.deepEqual(outcome(req('203.0.113.10', RIGHT), 2000), { status: 200 }, 'another address is not locked');
    assert.deepEqual(
      outcome(req('203.0.113.9', RIGHT), 31_001),
      { status: 200 },
      'the right token once the lockout ended',
    );
    // One record and one lockout line, per lockout; neither names a token.
    assert.deepEqual(records, [
      {
        kind: 'lockout',
        actor: '203.0.113.9',
        detail: { failures: 3, windowSeconds: 60, lockoutSeconds: 30, until: 31_000, listener: 'admin' },
      },
    ]);
    const locked = lines.filter((l) => l.fields.code === 'rate_limited');
    assert.equal(locked.length, 1);
    assert.deepEqual(locked[0]!.fields, { client: '203.0.113.9', retryAfterSeconds: 30, code: 'rate_limited' });
    assert.ok(
      !JSON.stringify(lines).includes('guess') && !JSON.stringify(lines).includes(RIGHT),
      'no token in a log line',
    );
  });

  it('a success resets the count; a missing token counts as a failure', () => {
    const { req, outcome } = setup();
    outcome(req('198.51.100.1'), 0);
    outcome(req('198.51.100.1', 'wrong'), 0);
    assert.equal(outcome(req('198.51.100.1', RIGHT), 0).status, 200);
    outcome(req('198.51.100.1'), 0);
    outcome(req('198.51.100.1', 'wrong'), 0);
    assert.equal(outcome(req('198.51.100.1', RIGHT), 0).status, 200, 'two failures since the reset: not locked');
  });

  it('behind a trusted proxy the client is the X-Forwarded-For address, as on the hooks listener; a reload applies at once', () => {
    let policy: AdminClientPolicy = { clientIps: new ClientIpResolver(['10.0.0.1']), authFailureLimit: LIMIT };
    const { req, outcome } = setup(() => policy);
    for (let i = 0; i < 3; i++) outcome(req('10.0.0.1', 'wrong', '203.0.113.5'), 0);
    assert.equal(outcome(req('10.0.0.1', RIGHT, '203.0.113.5'), 0).status, 429);
    assert.equal(outcome(req('10.0.0.1', RIGHT, '203.0.113.6'), 0).status, 200, 'another client behind the same proxy');
    // A reload without the proxy: its own address is the client now, and a forged header no longer picks a bucket.
    policy = { clientIps: new ClientIpResolver([]), authFailureLimit: { ...LIMIT, maxFailures: 1 } };
    assert.equal(outcome(req('10.0.0.1', 'wrong', '203.0.113.7'), 0).status, 401);
    assert.equal(outcome(req('10.0.0.1', RIGHT, '203.0.113.8'), 0).status, 429);
  });
});
