/**
 * The admin listener's protections against the real process (docs/security.md, "The admin listener"): its fair
 * per-address connection cap keeps `/readyz` answered under a connection flood, and wrong admin tokens are throttled
 * (429 with Retry-After, even for the right token until the lockout ends), logged without the token and audited.
 * Clients are distinct loopback addresses (127.0.0.x bound as the socket's local address).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { attempt, attempts, holdConnections } from '../support/conn-fairness.js';
import { type Hookgate, startHookgate } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const ADMIN_TOKEN = 'admin-token-for-limits-0123456789abcdef';
/** Each answer within this while flooded (typically a few ms; generous for a busy machine). */
const BOUND_MS = 3000;

describe('admin listener limits (real process)', { timeout: 120_000 }, () => {
  let hg: Hookgate;
  let adminUrl: string;
  before(async () => {
    hg = await startHookgate({
      config: {
        admin: { enabled: true, port: 0, token: ADMIN_TOKEN },
        hooks: { authFailureLimit: { maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60 } },
      },
    });
    adminUrl = (await hg.waitForLog((l) => l.msg === 'hookgate listening')).adminUrl as string;
  });
  after(async () => {
    await hg.cleanup();
  });

  it('300 idle connections from one address: /readyz is still answered promptly, from another address and from the same', async () => {
    const flood = await holdConnections(adminUrl, ['127.0.0.70'], 300);
    try {
      const other = await attempts(3, () => attempt(adminUrl, '127.0.0.71', { path: '/readyz' }, BOUND_MS));
      const same = await attempts(3, () => attempt(adminUrl, '127.0.0.70', { path: '/readyz' }, BOUND_MS));
      for (const a of other) assert.equal(a.outcome, 200, JSON.stringify({ other, same }));
      // The flood's own address churns its 32 slots (each closed connection reopens 200 ms later): a request from
      // it whose headers the server has not read yet is idle, and becomes the oldest idle one within tens of ms on
      // a loaded machine (docs/security.md, "Connection fairness": idle connections give way). So the same address
      // gets through on a retry, and a connection is only ever reset, never answered wrongly.
      assert.ok(
        same.some((a) => a.outcome === 200),
        JSON.stringify({ same }),
      );
      for (const a of same) assert.ok(a.outcome === 200 || a.outcome === 'ECONNRESET', JSON.stringify({ same }));
      assert.ok(flood.open() <= 300);
    } finally {
      flood.stop();
    }
  });

  it('30 wrong admin tokens: 401, then 429 with Retry-After (the right token too), one audit record, a log line without the token', async () => {
    const client = '127.0.0.72';
    const overview = (token: string) =>
      attempt(adminUrl, client, { path: '/api/v1/overview', headers: { authorization: `Bearer ${token}` } });
    const answers = await attempts(30, () => overview(`wrong-admin-guess-${Math.random()}`));
    assert.deepEqual(
      answers.slice(0, 20).map((a) => a.outcome),
      Array(20).fill(401),
      'the limit is 20 failures a minute per address',
    );
    assert.deepEqual(
      answers.slice(20).map((a) => a.outcome),
      Array(10).fill(429),
    );
    for (const a of answers.slice(20)) {
      const wait = Number(a.headers?.['retry-after']);
      assert.ok(wait >= 1 && wait <= 60, `Retry-After ${a.headers?.['retry-after']}`);
      assert.equal(JSON.parse(a.body!).code, 'rate_limited');
    }
    assert.equal((await overview(ADMIN_TOKEN)).outcome, 429, 'locked out: the right token waits too');
    // Another address is not locked out; it reads the lockout's one record. The recorder stores it after the
    // lockout, from its queue (src/audit.ts): on a busy machine the first read can come before that commit.
    const items = await waitFor('the lockout record listed', async () => {
      const audit = await attempt(adminUrl, '127.0.0.73', {
        path: '/api/v1/audit?kind=lockout',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.equal(audit.outcome, 200, audit.body);
      const listed = (JSON.parse(audit.body!) as { items: Array<{ actor: string; detail: Record<string, unknown> }> })
        .items;
      return listed.length ? listed : undefined;
    });
    assert.deepEqual(
      items.map((i) => [i.actor, i.detail.listener, i.detail.failures]),
      [[client, 'admin', 20]],
    );
    const log = await hg.waitForLog(
      (l) => l.code === 'rate_limited' && String(l.msg).startsWith('admin auth throttled'),
    );
    assert.equal(log.client, client);
    const text = JSON.stringify(hg.logs);
    assert.ok(!text.includes('wrong-admin-guess') && !text.includes(ADMIN_TOKEN), 'no token in the log');
  });
});
