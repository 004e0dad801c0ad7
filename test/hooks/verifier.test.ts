import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import pino from 'pino';
import { validateConfig } from '../../src/config/load.js';
import { buildHooksContext } from '../../src/hooks/context.js';
import { createHookRoutes } from '../../src/hooks/routes.js';
import { HOOK_TOKEN, type PresentedToken, type VerifyRequest } from '../../src/hooks/verifier.js';
import { TOKEN } from '../support/token.js';

const NOW = 1_800_000_000_000;
const SECRET = 'gh-secret-for-tests';

function request(
  over: { hookToken?: PresentedToken; headers?: IncomingHttpHeaders; rawBody?: Buffer } = {},
): VerifyRequest {
  return {
    rawHeaders: over.headers ?? {},
    now: NOW,
    hookToken: over.hookToken,
    rawBody: over.rawBody ?? Buffer.alloc(0),
    peek: () => null,
  };
}

function routes(mappings: unknown[] = []) {
  const config = validateConfig({ hooks: { enabled: true, token: TOKEN, mappings } }, undefined, process.cwd(), {
    env: {},
  });
  return { ctx: buildHooksContext(config, 1), routes: createHookRoutes({ logger: pino({ level: 'silent' }) }) };
}

describe('verifiers', () => {
  it('the hook token: a listed, unexpired token is a settled verdict naming its id; expired or absent is refused before the body', async () => {
    assert.equal(HOOK_TOKEN.needsBody, false);
    assert.deepEqual(await HOOK_TOKEN.verify(request({ hookToken: { id: 'ci', notAfter: undefined } })), {
      ok: true,
      tokenId: 'ci',
      settled: true,
    });
    assert.deepEqual(await HOOK_TOKEN.verify(request({ hookToken: { id: 'old', notAfter: NOW } })), {
      ok: false,
      scheme: 'token',
      reason: 'expired token old',
    });
    assert.deepEqual(await HOOK_TOKEN.verify(request()), { ok: false, scheme: 'token', reason: undefined });
  });

  it('each route has one verifier, compiled once: the same plan for every request of a generation', () => {
    const s = routes([
      { id: 'gh', match: { path: 'github' }, messageTemplate: 'm', signature: { scheme: 'github', secret: SECRET } },
    ]);
    assert.equal(s.routes.plan(s.ctx, 'wake').verifier, HOOK_TOKEN);
    assert.equal(s.routes.plan(s.ctx, 'agent'), s.routes.plan(s.ctx, 'wake'));
    assert.equal(s.routes.plan(s.ctx, 'github'), s.routes.plan(s.ctx, 'github'));
    assert.equal(s.routes.plan(s.ctx, 'github').verifier.needsBody, true);
    assert.equal(
      s.routes.plan(s.ctx, 'unknown-1'),
      s.routes.plan(s.ctx, 'unknown-2'),
      'any other path shares one plan',
    );
  });

  it('signature or token: a valid token passes unverified, a signature verifies without it; neither is refused; never settled', async () => {
    const s = routes([
      { id: 'gh', match: { path: 'github' }, messageTemplate: 'm', signature: { scheme: 'github', secret: SECRET } },
    ]);
    const v = s.routes.plan(s.ctx, 'github').verifier;
    const raw = Buffer.from('{"action":"opened"}');
    const signed = { 'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}` };
    assert.deepEqual(await v.verify(request({ hookToken: { id: 'default', notAfter: undefined }, rawBody: raw })), {
      ok: true,
      tokenId: 'default',
      settled: false,
    });
    const bySignature = await v.verify(request({ rawBody: raw, headers: signed }));
    assert.equal(
      bySignature.ok && !bySignature.settled && bySignature.tokenId === null && bySignature.signatures?.any,
      true,
    );
    const forged = await v.verify(request({ rawBody: raw, headers: { 'x-hub-signature-256': 'sha256=00' } }));
    assert.equal(forged.ok, false);
    assert.equal(!forged.ok && forged.scheme, 'signature');
  });
});
