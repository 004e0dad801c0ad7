import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { HttpError, type HttpErrorCode } from '../../src/errors.js';
import { buildHooksContext, type HooksContext } from '../../src/hooks/context.js';
import { normalizeAgent } from '../../src/hooks/normalize.js';
import {
  buildRun,
  resolveAccount,
  resolveAgent,
  resolveChannel,
  resolveModel,
  checkSessionKey,
  resolveSessionKey,
  resolveWakeSessionKey,
  type RunOrigin,
} from '../../src/hooks/policy.js';
import { loadRecipientCheck } from '../../src/channels/registry.js';
import { TOKEN } from '../support/token.js';

const NOW = Date.parse('2026-02-03T04:05:06Z');
const RUN_ID = '0194d6f2-2a40-7000-8000-000000000001';
const UUID_KEY = /^hook:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Over {
  hooks?: Record<string, unknown>;
  agents?: Record<string, unknown>;
  models?: Record<string, unknown>;
  channels?: Record<string, unknown>;
}

function ctxOf(over: Over = {}, plugins: string[] = []): HooksContext {
  const config = validateConfig(
    {
      ...over,
      hooks: { enabled: true, token: TOKEN, ...over.hooks },
      agents: over.agents ?? {
        list: [
          { id: 'main', default: true },
          { id: 'ops', timeoutSeconds: 42 },
        ],
      },
    },
    undefined,
    '/tmp',
  );
  return buildHooksContext(config, 1, plugins);
}

function rejects(fn: () => unknown, code: HttpErrorCode, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof HttpError, `expected an HttpError, got ${String(err)}`);
    assert.equal(err.status, 400);
    assert.equal(err.code, code);
    if (message) assert.match(err.message, message);
    return true;
  });
}

const REQUEST: RunOrigin = {
  hookPath: 'agent',
  mappingId: null,
  contentSource: 'webhook',
  sessionKeySource: 'request',
  allowUnsafeExternalContent: false,
};

describe('recipient policy', () => {
  const configured = async () => {
    const channels = {
      discord: { botToken: 'x' },
      webhook: {
        targets: {
          ops: { url: 'http://127.0.0.1:1/h', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
          audit: { url: 'http://127.0.0.1:1/a', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
        },
      },
    };
    const base = ctxOf({ channels });
    return buildHooksContext(base.config, 1, [], await loadRecipientCheck(base.config.channels));
  };

  it("refuses a to that is not its platform's shape with 400 invalid_channel naming the shape", async () => {
    const ctx = await configured();
    for (const to of ['..', '.', 'a/b', '1?x', 'abc']) {
      rejects(
        () => buildRun(ctx, normalizeAgent({ message: 'm', channel: 'discord', to }), REQUEST, NOW),
        'invalid_channel',
        /^"to" is not a recipient of channel discord: expected a channel id: a snowflake/,
      );
    }
    assert.equal(
      buildRun(ctx, normalizeAgent({ message: 'm', channel: 'discord', to: ' 1100000000000000001 ' }), REQUEST, NOW).to,
      '1100000000000000001',
    );
    assert.equal(
      buildRun(ctx, normalizeAgent({ message: 'm', channel: 'discord' }), REQUEST, NOW).to,
      null,
      'no to: the route supplies it later',
    );
  });

  it('refuses a webhook to that names no configured target, listing the targets', async () => {
    const ctx = await configured();
    rejects(
      () =>
        buildRun(
          ctx,
          normalizeAgent({ message: 'm', channel: 'webhook', to: 'http://169.254.169.254/latest' }),
          REQUEST,
          NOW,
        ),
      'invalid_channel',
      /the name of a configured target \(channels\.webhook\.targets: "ops", "audit"\)$/,
    );
    assert.equal(
      buildRun(ctx, normalizeAgent({ message: 'm', channel: 'webhook', to: 'audit' }), REQUEST, NOW).to,
      'audit',
    );
  });

  it('holds "last" (platform known only at delivery) to the shared rule', async () => {
    const ctx = await configured();
    rejects(
      () => buildRun(ctx, normalizeAgent({ message: 'm', to: '..' }), REQUEST, NOW),
      'invalid_channel',
      /channel last: expected one line/,
    );
    assert.equal(
      buildRun(ctx, normalizeAgent({ message: 'm', to: '1100000000000000001' }), REQUEST, NOW).to,
      '1100000000000000001',
    );
  });
});

describe('channel policy', () => {
  it('accepts last (the default) and the always-available log channel', () => {
    const ctx = ctxOf();
    assert.equal(resolveChannel(ctx, 'last'), 'last');
    assert.equal(resolveChannel(ctx, 'LAST'), 'last');
    assert.equal(resolveChannel(ctx, 'log'), 'log');
    assert.equal(buildRun(ctx, normalizeAgent({ message: 'm' }), REQUEST, NOW).channel, 'last');
  });

  it('refuses a core platform that is not configured, listing what is configured', () => {
    const ctx = ctxOf();
    rejects(
      () => resolveChannel(ctx, 'telegram'),
      'invalid_channel',
      /channel "telegram" is not configured; use one of: last, log$/,
    );
    rejects(
      () => buildRun(ctx, normalizeAgent({ message: 'm', channel: 'discord' }), REQUEST, NOW),
      'invalid_channel',
      /last, log/,
    );
  });

  it('refuses unknown channels, listing every configured value and nothing else', () => {
    const ctx = ctxOf({
      channels: { telegram: { botToken: '123456:ABC-def_ghi' }, slack: { botToken: 'xoxb-1-2-3' } },
    });
    assert.throws(
      () => resolveChannel(ctx, 'matrix'),
      (err: unknown) => {
        assert.ok(err instanceof HttpError);
        assert.equal(err.code, 'invalid_channel');
        const listed = err.message.split('use one of: ')[1]?.split(', ').sort();
        assert.deepEqual(listed, ['last', 'log', 'slack', 'telegram']);
        return true;
      },
    );
  });

  it('accepts configured platforms case-insensitively and by their aliases', () => {
    const ctx = ctxOf({
      channels: {
        telegram: { botToken: '123456:ABC-def_ghi' },
        imessage: { serverUrl: 'http://127.0.0.1:1234', password: 'pw' },
        msteams: { appId: 'app', appPassword: 'secret' },
        googlechat: { accessToken: 'ya29.token' },
      },
    });
    assert.equal(resolveChannel(ctx, 'telegram'), 'telegram');
    assert.equal(resolveChannel(ctx, ' Telegram '), 'telegram');
    assert.equal(resolveChannel(ctx, 'imessage'), 'imessage');
    assert.equal(resolveChannel(ctx, 'imsg'), 'imessage');
    assert.equal(resolveChannel(ctx, 'teams'), 'msteams');
    assert.equal(resolveChannel(ctx, 'google-chat'), 'googlechat');
    assert.equal(buildRun(ctx, normalizeAgent({ message: 'm', channel: 'IMSG' }), REQUEST, NOW).channel, 'imessage');
    rejects(() => resolveChannel(ctxOf(), 'imsg'), 'invalid_channel', /"imsg"/);
  });

  it('accepts extension channels when configured: webhook with targets, plugins by id', () => {
    rejects(() => resolveChannel(ctxOf(), 'webhook'), 'invalid_channel');
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const ctx = ctxOf({ channels: { webhook: { targets: { ops: { url: 'http://127.0.0.1:9/hook', secret } } } } }, [
      'matrix',
    ]);
    assert.equal(resolveChannel(ctx, 'webhook'), 'webhook');
    assert.equal(resolveChannel(ctx, 'matrix'), 'matrix');
    assert.throws(
      () => resolveChannel(ctx, 'xmpp'),
      (err: unknown) => {
        assert.ok(err instanceof HttpError);
        assert.equal(err.code, 'invalid_channel');
        assert.deepEqual(err.message.split('use one of: ')[1]?.split(', ').sort(), [
          'last',
          'log',
          'matrix',
          'webhook',
        ]);
        return true;
      },
    );
  });
});

describe('account policy', () => {
  const TWO_BOTS = {
    telegram: {
      botToken: '111:default-token',
      accounts: { alerts: { botToken: '222:alerts-token' }, ops: { botToken: '333:ops-token' } },
    },
    slack: { botToken: 'xoxb-1' },
  };
  const ctx = ctxOf({ channels: TWO_BOTS });
  const runWith = (p: Record<string, unknown>) => buildRun(ctx, normalizeAgent({ message: 'm', ...p }), REQUEST, NOW);

  it('the configured accounts of each core platform are computed with the generation, default first', () => {
    assert.deepEqual(Object.fromEntries(ctx.channelAccounts), {
      telegram: ['default', 'alerts', 'ops'],
      slack: ['default'],
    });
  });

  it('a run carries the named account; none, or "default", is the default account (null)', () => {
    assert.equal(runWith({ channel: 'telegram', to: '1', accountId: 'alerts' }).accountId, 'alerts');
    assert.equal(
      runWith({ channel: 'telegram', to: '1', accountId: ' ALERTS ' }).accountId,
      'alerts',
      'ids compare case-insensitively',
    );
    assert.equal(runWith({ channel: 'telegram', to: '1' }).accountId, null);
    assert.equal(runWith({ channel: 'telegram', to: '1', accountId: 'default' }).accountId, null);
    assert.equal(runWith({ channel: 'slack', to: 'C1', accountId: 'default' }).accountId, null);
  });

  it('needs an explicit channel: with `last` (or no channel) it is 400 invalid_channel, not ignored', () => {
    rejects(
      () => runWith({ accountId: 'alerts' }),
      'invalid_channel',
      /^accountId needs an explicit channel \(channel is "last"\)/,
    );
    rejects(
      () => runWith({ channel: 'last', to: '1', accountId: 'alerts' }),
      'invalid_channel',
      /accountId needs an explicit channel/,
    );
  });

  it('an account the channel does not have is 400 invalid_channel naming the configured ones', () => {
    rejects(
      () => runWith({ channel: 'telegram', to: '1', accountId: 'nope' }),
      'invalid_channel',
      /accountId "nope" is not an account of channel "telegram"; use one of: default, alerts, ops$/,
    );
    rejects(
      () => runWith({ channel: 'slack', to: 'C1', accountId: 'alerts' }),
      'invalid_channel',
      /use one of: default$/,
    );
    rejects(
      () => runWith({ channel: 'log', accountId: 'alerts' }),
      'invalid_channel',
      /channel "log" has no accounts; remove accountId/,
    );
    assert.equal(resolveAccount(ctx, 'telegram', undefined), null);
  });
});

describe('model policy', () => {
  const providers = {
    providers: {
      local: { api: 'openai-chat', baseUrl: 'http://127.0.0.1:11434/v1' },
      limited: { api: 'openai-chat', baseUrl: 'http://127.0.0.1:8000/v1', models: ['small'] },
    },
  };

  it('no model → null (the agent default)', () => {
    assert.equal(resolveModel(ctxOf(), undefined), null);
    assert.equal(buildRun(ctxOf(), normalizeAgent({ message: 'm' }), REQUEST, NOW).model, null);
  });

  it('accepts a configured provider model, the built-in echo, and a listed model', () => {
    const ctx = ctxOf({ models: providers });
    assert.equal(resolveModel(ctx, 'echo/echo'), 'echo/echo');
    assert.equal(resolveModel(ctx, 'local/llama3.1:8b'), 'local/llama3.1:8b');
    assert.equal(resolveModel(ctx, 'limited/small'), 'limited/small');
  });

  it('refuses an unknown provider, an unlisted model, or a malformed ref with model_not_allowed', () => {
    const ctx = ctxOf({ models: providers });
    rejects(() => resolveModel(ctx, 'nope/x'), 'model_not_allowed', /unknown provider "nope"/);
    rejects(() => resolveModel(ctx, 'limited/large'), 'model_not_allowed', /lists only small/);
    rejects(
      () => resolveModel(ctx, 'justaname'),
      'model_not_allowed',
      /neither <provider>\/<model> nor a configured alias/,
    );
    rejects(() => resolveModel(ctx, 'local/'), 'model_not_allowed');
    rejects(() => resolveModel(ctx, '/llama'), 'model_not_allowed');
  });

  it('with agents.defaults.models set, accepts only listed models (array form)', () => {
    const ctx = ctxOf({
      models: providers,
      agents: { defaults: { models: ['echo/echo', 'local/llama3'] }, list: [{ id: 'main' }] },
    });
    assert.equal(resolveModel(ctx, 'local/llama3'), 'local/llama3');
    rejects(
      () => resolveModel(ctx, 'local/mistral'),
      'model_not_allowed',
      /not in agents\.defaults\.models \(allowed: echo\/echo, local\/llama3\)/,
    );
    rejects(
      () => buildRun(ctx, normalizeAgent({ message: 'm', model: 'limited/small' }), REQUEST, NOW),
      'model_not_allowed',
    );
  });

  it('with agents.defaults.models as a record, resolves aliases and still enforces the list', () => {
    const ctx = ctxOf({
      models: providers,
      agents: { defaults: { models: { 'echo/echo': {}, 'local/llama3': { alias: 'fast' } } }, list: [{ id: 'main' }] },
    });
    assert.equal(resolveModel(ctx, 'fast'), 'local/llama3');
    assert.equal(resolveModel(ctx, ' fast '), 'local/llama3');
    assert.equal(resolveModel(ctx, 'local/llama3'), 'local/llama3');
    assert.equal(buildRun(ctx, normalizeAgent({ message: 'm', model: 'fast' }), REQUEST, NOW).model, 'local/llama3');
    rejects(() => resolveModel(ctx, 'slow'), 'model_not_allowed');
    rejects(() => resolveModel(ctx, 'local/other'), 'model_not_allowed');
  });
});

describe('session key policy', () => {
  it('refuses a request sessionKey unless hooks.allowRequestSessionKey', () => {
    const ctx = ctxOf();
    rejects(() => checkSessionKey(ctx, 'hook:mine', 'request'), 'session_key_not_allowed', /allowRequestSessionKey/);
    rejects(
      () => buildRun(ctx, normalizeAgent({ message: 'm', sessionKey: 'hook:mine' }), REQUEST, NOW),
      'session_key_not_allowed',
    );
  });

  it('accepts a request key when allowed and no prefixes are set', () => {
    const ctx = ctxOf({ hooks: { allowRequestSessionKey: true } });
    assert.equal(checkSessionKey(ctx, 'anything:at-all', 'request'), 'anything:at-all');
    assert.equal(
      buildRun(ctx, normalizeAgent({ message: 'm', sessionKey: 'hook:mine' }), REQUEST, NOW).sessionKey,
      'hook:mine',
    );
  });

  it('checks allowed keys against allowedSessionKeyPrefixes, case-insensitively', () => {
    const ctx = ctxOf({ hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'CI:'] } });
    assert.equal(checkSessionKey(ctx, 'hook:a', 'request'), 'hook:a');
    assert.equal(checkSessionKey(ctx, 'HOOK:B', 'request'), 'HOOK:B');
    assert.equal(checkSessionKey(ctx, 'ci:build-7', 'request'), 'ci:build-7');
    assert.equal(checkSessionKey(ctx, 'Ci:build-8', 'request'), 'Ci:build-8');
    rejects(
      () => checkSessionKey(ctx, 'main', 'request'),
      'session_key_not_allowed',
      /must start with one of: hook:, ci:/,
    );
    rejects(() => checkSessionKey(ctx, 'agent:main:x', 'request'), 'session_key_not_allowed');
    rejects(() => checkSessionKey(ctx, ' hook:a', 'request'), 'session_key_not_allowed');
  });

  it('a mapping literal key needs no opt-in but obeys the prefixes; a templated one needs the opt-in', () => {
    const ctx = ctxOf({ hooks: { allowedSessionKeyPrefixes: ['hook:'] } });
    assert.equal(checkSessionKey(ctx, 'hook:static', 'static'), 'hook:static');
    rejects(() => checkSessionKey(ctx, 'other:static', 'static'), 'session_key_not_allowed');
    rejects(
      () => checkSessionKey(ctx, 'hook:gmail:1', 'templated'),
      'session_key_not_allowed',
      /allowRequestSessionKey/,
    );
  });

  it('without an accepted key uses defaultSessionKey', () => {
    const ctx = ctxOf({ hooks: { defaultSessionKey: 'hook:ingress' } });
    assert.equal(resolveSessionKey(ctx, undefined, 'request', RUN_ID), 'hook:ingress');
    assert.equal(buildRun(ctx, normalizeAgent({ message: 'm' }), REQUEST, NOW).sessionKey, 'hook:ingress');
  });

  it("else the run's own session, hook:<its run id>, fresh per run", () => {
    const ctx = ctxOf();
    const a = buildRun(ctx, normalizeAgent({ message: 'm' }), REQUEST, NOW);
    const b = buildRun(ctx, normalizeAgent({ message: 'm' }), REQUEST, NOW);
    assert.match(a.sessionKey, UUID_KEY);
    assert.equal(a.sessionKey, `hook:${a.id}`);
    assert.equal(b.sessionKey, `hook:${b.id}`);
    assert.notEqual(a.sessionKey, b.sessionKey);
    assert.equal(resolveSessionKey(ctx, undefined, 'request', RUN_ID), `hook:${RUN_ID}`);
  });

  it('the fresh keys are UUIDv7s, in creation order (the session indexes then grow at their end, not at random pages)', () => {
    const ctx = ctxOf();
    const keys = Array.from(
      { length: 50 },
      () => buildRun(ctx, normalizeAgent({ message: 'm' }), REQUEST, NOW).sessionKey,
    );
    for (const k of keys) assert.match(k, /^hook:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // Same millisecond or later: the 48-bit time prefix never goes back.
    for (let i = 1; i < keys.length; i++)
      assert.ok(keys[i]!.slice(0, 18) >= keys[i - 1]!.slice(0, 18), `${keys[i]} after ${keys[i - 1]}`);
  });
});

describe('agent policy', () => {
  it("a request's unknown agentId is 400 invalid_agent naming the configured agents (as OpenClaw); a mapping's falls back", () => {
    const ctx = ctxOf();
    rejects(
      () => resolveAgent(ctx, 'ghost', true),
      'invalid_agent',
      /^unknown agentId "ghost"; the configured agents are: main, ops$/,
    );
    assert.equal(resolveAgent(ctx, 'OPS', true), 'ops');
    assert.equal(resolveAgent(ctx, undefined, true), 'main');
    rejects(() => buildRun(ctx, normalizeAgent({ message: 'm', agentId: 'ghost' }), REQUEST, NOW), 'invalid_agent');
    const mapped: RunOrigin = { ...REQUEST, hookPath: 'x', mappingId: 'm1', sessionKeySource: 'static' };
    assert.equal(buildRun(ctx, normalizeAgent({ message: 'm', agentId: 'ghost' }), mapped, NOW).agentId, 'main');
  });

  it('uses the requested agent when it exists (ids are case-insensitive), else the default agent (mappings)', () => {
    const ctx = ctxOf();
    assert.equal(resolveAgent(ctx, undefined), 'main');
    assert.equal(resolveAgent(ctx, 'ops'), 'ops');
    assert.equal(resolveAgent(ctx, 'OPS'), 'ops');
    assert.equal(resolveAgent(ctx, 'ghost'), 'main');
    const other = ctxOf({ agents: { list: [{ id: 'first' }, { id: 'boss', default: true }] } });
    assert.equal(resolveAgent(other, 'ghost'), 'boss');
    assert.equal(resolveAgent(other, undefined), 'boss');
    const noDefault = ctxOf({ agents: { list: [{ id: 'first' }, { id: 'second' }] } });
    assert.equal(resolveAgent(noDefault, undefined), 'first');
  });

  it('allows every agent when allowedAgentIds is omitted or contains *', () => {
    for (const hooks of [{}, { allowedAgentIds: ['*'] }, { allowedAgentIds: ['main', '*'] }]) {
      const ctx = ctxOf({ hooks });
      assert.equal(resolveAgent(ctx, 'ops'), 'ops');
      assert.equal(resolveAgent(ctx, undefined), 'main');
    }
  });

  it('denies every agent when allowedAgentIds is []', () => {
    const ctx = ctxOf({ hooks: { allowedAgentIds: [] } });
    for (const id of [undefined, 'main', 'ops', 'ghost'])
      rejects(() => resolveAgent(ctx, id), 'agent_not_allowed', /allowedAgentIds/);
    rejects(() => buildRun(ctx, normalizeAgent({ message: 'm' }), REQUEST, NOW), 'agent_not_allowed');
  });

  it('checks the allowlist against the agent actually used', () => {
    const onlyOps = ctxOf({ hooks: { allowedAgentIds: ['ops'] } });
    assert.equal(resolveAgent(onlyOps, 'ops'), 'ops');
    assert.equal(resolveAgent(onlyOps, 'OPS'), 'ops');
    rejects(() => resolveAgent(onlyOps, undefined), 'agent_not_allowed'); // the default, main, is used
    rejects(() => resolveAgent(onlyOps, 'ghost'), 'agent_not_allowed'); // falls back to main
    const onlyMain = ctxOf({ hooks: { allowedAgentIds: ['Main'] } });
    assert.equal(resolveAgent(onlyMain, 'ghost'), 'main'); // unknown → main, which is allowed
    rejects(() => resolveAgent(onlyMain, 'ops'), 'agent_not_allowed');
  });
});

describe('buildRun', () => {
  it('builds the run to store from a request and its origin', () => {
    const ctx = ctxOf({
      hooks: { allowRequestSessionKey: true },
      channels: { telegram: { botToken: '123456:ABC-def_ghi' } },
    });
    const req = normalizeAgent({
      message: ' Deploy failed ',
      name: 'CI',
      agentId: 'ops',
      sessionKey: 'hook:ci:7',
      sessionMode: 'persistent',
      wakeMode: 'next-heartbeat',
      deliver: false,
      channel: 'Telegram',
      to: '-100123',
      model: 'echo/echo',
      thinking: 'low',
      timeoutSeconds: 30,
    });
    const origin: RunOrigin = {
      hookPath: 'ci',
      mappingId: 'ci-map',
      contentSource: 'email',
      sessionKeySource: 'request',
      allowUnsafeExternalContent: true,
    };
    const run = buildRun(ctx, req, origin, NOW);
    assert.match(run.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      { ...run, id: 'x' },
      {
        id: 'x',
        agentId: 'ops',
        sessionKey: 'hook:ci:7',
        sessionMode: 'persistent',
        name: 'CI',
        message: 'Deploy failed',
        wakeMode: 'next-heartbeat',
        deliver: false,
        channel: 'telegram',
        to: '-100123',
        accountId: null,
        model: 'echo/echo',
        thinking: 'low',
        timeoutSeconds: 30,
        allowUnsafeExternalContent: true,
        contentSource: 'email',
        hookPath: 'ci',
        mappingId: 'ci-map',
        createdAt: NOW,
      },
    );
    assert.notEqual(buildRun(ctx, req, origin, NOW).id, run.id);
  });

  it('defaults: deliver true, channel last, nulls, and the timeout of the agent, else of agents.defaults', () => {
    const ctx = ctxOf({
      agents: {
        defaults: { timeoutSeconds: 120 },
        list: [
          { id: 'main', default: true },
          { id: 'ops', timeoutSeconds: 42 },
        ],
      },
    });
    const main = buildRun(ctx, normalizeAgent({ message: 'm' }), REQUEST, NOW);
    assert.equal(main.agentId, 'main');
    assert.equal(main.deliver, true);
    assert.equal(main.channel, 'last');
    assert.equal(main.to, null);
    assert.equal(main.model, null);
    assert.equal(main.thinking, null);
    assert.equal(main.name, 'Hook');
    assert.equal(main.timeoutSeconds, 120);
    assert.equal(buildRun(ctx, normalizeAgent({ message: 'm', agentId: 'ops' }), REQUEST, NOW).timeoutSeconds, 42);
    assert.equal(
      buildRun(ctx, normalizeAgent({ message: 'm', agentId: 'ops', timeoutSeconds: 5 }), REQUEST, NOW).timeoutSeconds,
      5,
    );
    assert.equal(
      buildRun(ctxOf({ agents: { list: [{ id: 'main' }] } }), normalizeAgent({ message: 'm' }), REQUEST, NOW)
        .timeoutSeconds,
      600,
    );
  });
});

describe('OpenClaw fields: persistent sessions and wake session keys', () => {
  const agentReq = (body: Record<string, unknown>) => normalizeAgent({ message: 'hi', ...body });

  it('sessionMode persistent without any key is 400 invalid_payload: a fresh hook:<uuid> would never persist', () => {
    rejects(
      () => buildRun(ctxOf(), agentReq({ sessionMode: 'persistent' }), REQUEST, NOW),
      'invalid_payload',
      /sessionKey is required when sessionMode is persistent/,
    );
  });

  it('sessionMode persistent with a request key, or with hooks.defaultSessionKey, keeps that key', () => {
    const allow = ctxOf({ hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] } });
    assert.equal(
      buildRun(allow, agentReq({ sessionMode: 'persistent', sessionKey: 'hook:ci' }), REQUEST, NOW).sessionKey,
      'hook:ci',
    );
    const withDefault = ctxOf({ hooks: { defaultSessionKey: 'hook:all' } });
    const run = buildRun(withDefault, agentReq({ sessionMode: 'persistent' }), REQUEST, NOW);
    assert.equal(run.sessionKey, 'hook:all');
    assert.equal(run.sessionMode, 'persistent');
  });

  it('a wake without a key goes to the main session, never to defaultSessionKey', () => {
    assert.equal(
      resolveWakeSessionKey(ctxOf({ hooks: { defaultSessionKey: 'hook:all' } }), undefined, 'request'),
      'main',
    );
  });

  it('a wake key follows the request-key policy: opt-in, then the prefixes', () => {
    rejects(
      () => resolveWakeSessionKey(ctxOf(), 'hook:x', 'request'),
      'session_key_not_allowed',
      /allowRequestSessionKey/,
    );
    const allow = ctxOf({ hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:', 'ops:'] } });
    assert.equal(resolveWakeSessionKey(allow, 'ops:db', 'request'), 'ops:db');
    rejects(
      () => resolveWakeSessionKey(allow, 'agent:x', 'request'),
      'session_key_not_allowed',
      /must start with one of: hook:, ops:/,
    );
    // A mapping's literal key is the operator's own choice: no opt-in needed, prefixes still apply.
    assert.equal(
      resolveWakeSessionKey(ctxOf({ hooks: { allowedSessionKeyPrefixes: ['hook:'] } }), 'hook:mapped', 'static'),
      'hook:mapped',
    );
  });
});
