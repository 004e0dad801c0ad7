/**
 * `hookgate import openclaw` (src/cli/openclaw-import.ts, openclaw-platforms.ts, openclaw-command.ts): OpenClaw
 * configs shaped as OpenClaw's documentation and tests show them, converted, checked as `config check` does, and
 * serving a mapped request the way OpenClaw would. The written file and the CLI's run are in
 * test/e2e/openclaw-import.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import pino from 'pino';
import { parseConfig } from '../../src/config/load.js';
import { buildHooksContext } from '../../src/hooks/context.js';
import type { HookAction } from '../../src/hooks/dispatch.js';
import { createHookRoutes } from '../../src/hooks/routes.js';
import { renderConfig } from '../../src/cli/openclaw-command.js';
import { convertOpenClaw } from '../../src/cli/openclaw-import.js';
import { OPENCLAW_GMAIL_BLOCK } from '../support/openclaw.js';
import { tempDir } from '../support/temp-dir.js';

const HOOK_TOKEN = 'oc-hook-token-0123456789abcdef';
const TG_TOKEN = '123456789:AAHsecretsecretsecret';
const ENV = {
  OPENCLAW_HOOKS_TOKEN: HOOK_TOKEN,
  ANTHROPIC_API_KEY: 'sk-ant-secret',
  TG_WORK_TOKEN: '987654321:AAHworkwork',
  DISCORD_BOT_TOKEN: 'discord-secret',
};

/** The hooks block of OpenClaw's webhook docs (mappings, the gmail preset and its watcher block, a transform). */
const OPENCLAW = {
  gateway: { port: 18789, auth: { mode: 'token', token: 'gateway-secret' } },
  agents: {
    defaults: {
      model: { primary: 'anthropic/claude-sonnet-4-6', fallbacks: ['openai/gpt-5.2'] },
      workspace: '~/.openclaw/workspace',
    },
    list: [
      { id: 'main', default: true },
      { id: 'hooks', name: 'Hooks', workspace: '~/.openclaw/workspace-hooks' },
    ],
  },
  channels: {
    telegram: {
      botToken: TG_TOKEN,
      dmPolicy: 'pairing',
      accounts: { work: { botToken: { source: 'env', provider: 'default', id: 'TG_WORK_TOKEN' } } },
    },
    discord: { token: '${DISCORD_BOT_TOKEN}', guilds: { '123': { requireMention: true } } },
    slack: { botToken: { file: 'slack-bot-token' }, appToken: 'xapp-1-secret' },
    whatsapp: { dmPolicy: 'allowlist', allowFrom: ['+15555550123'] },
    feishu: { appId: 'cli_x', appSecret: 'feishu-secret' },
  },
  hooks: {
    enabled: true,
    token: '${OPENCLAW_HOOKS_TOKEN}',
    path: '/hooks',
    maxBodyBytes: 262144,
    defaultSessionKey: 'hook:ingress',
    allowRequestSessionKey: false,
    allowedSessionKeyPrefixes: ['hook:'],
    allowedAgentIds: ['hooks', 'main'],
    presets: ['gmail'],
    transformsDir: 'custom',
    mappings: [
      {
        match: { path: 'gmail' },
        action: 'agent',
        agentId: 'hooks',
        wakeMode: 'now',
        name: 'Gmail',
        sessionKey: 'hook:gmail:inbox',
        messageTemplate: 'From: {{messages[0].from}}\nSubject: {{messages[0].subject}}\n{{messages[0].snippet}}',
        model: 'anthropic/claude-sonnet-4-6',
        deliver: true,
        channel: 'telegram',
        to: '123456789',
      },
      {
        id: 'ci',
        match: { path: 'ci' },
        action: 'wake',
        textTemplate: 'CI {{status}} {{build}}',
        wakeMode: 'next-heartbeat',
      },
      { id: 'kind', match: { path: 'kind' }, transform: { module: 'kind.mjs' } },
    ],
    gmail: OPENCLAW_GMAIL_BLOCK,
  },
};

/** Converted, rendered and loaded from a directory holding the transforms and the secret file, as the command does. */
function imported(input: unknown, env: Record<string, string> = ENV) {
  const dir = tempDir('hookgate-import-');
  mkdirSync(join(dir, 'hooks/transforms/custom'), { recursive: true });
  writeFileSync(
    join(dir, 'hooks/transforms/custom/kind.mjs'),
    'export default (ctx) => ({ message: `kind ${ctx.url.searchParams.get("kind")}` });\n',
  );
  writeFileSync(join(dir, 'slack-bot-token'), 'xoxb-1-secret\n');
  const converted = convertOpenClaw(input, { transforms: 'copy' });
  const text = renderConfig(converted, '/home/u/.openclaw/openclaw.json');
  const config = parseConfig(text, join(dir, 'hookgate.json5'), dir, { env });
  return { converted, text, config };
}

async function resolveOn(
  config: ReturnType<typeof imported>['config'],
  subPath: string,
  payload: Record<string, unknown>,
  query = '',
) {
  const routes = createHookRoutes({ logger: pino({ level: 'silent' }) });
  const ctx = buildHooksContext(config, 1, ['telegram', 'discord', 'slack']);
  const r = await routes.resolve({
    ctx,
    subPath,
    payload,
    rawBody: Buffer.from(JSON.stringify(payload)),
    headers: {},
    rawHeaders: {},
    query: new URLSearchParams(query),
    rawQuery: query || undefined,
    now: Date.now(),
    tokenVerified: true,
  });
  assert.equal(r.kind, 'actions');
  return (r as { actions: HookAction[] }).actions;
}

describe('hookgate import openclaw: conversion', () => {
  it('a hooks config with mappings, the gmail preset and its watcher block, transforms, channels and accounts passes config check', () => {
    const { config, converted } = imported(OPENCLAW);
    assert.equal(config.hooks.token, HOOK_TOKEN);
    assert.equal(config.hooks.mappings.length, 3);
    assert.equal(config.hooks.gmail.account, undefined, "OpenClaw's watcher block: hookgate's chain stays off");
    assert.equal(config.hooks.gmail.watcherAccount, 'openclaw@gmail.com');
    assert.deepEqual(config.hooks.gmail.labels, ['INBOX']);
    assert.equal(config.hooks.gmail.renewEveryHours, 12);
    assert.equal(config.agents.defaults.model, 'anthropic/claude-sonnet-4-6');
    assert.deepEqual(
      config.agents.list.map((a) => a.id),
      ['main', 'hooks'],
    );
    assert.equal(config.channels.telegram?.botToken, TG_TOKEN);
    assert.equal(config.channels.telegram?.accounts.work?.botToken, ENV.TG_WORK_TOKEN);
    assert.equal(config.channels.discord?.botToken, ENV.DISCORD_BOT_TOKEN);
    assert.equal(config.channels.slack?.botToken, 'xoxb-1-secret');
    assert.equal(config.channels.whatsapp, undefined);
    const action = (key: string) => converted.report.find((r) => r.key === key)?.action;
    assert.equal(action('hooks.token'), 'copied');
    assert.equal(action('channels.telegram.accounts.work.botToken'), 'converted');
    assert.equal(action('channels.whatsapp'), 'dropped');
    assert.equal(action('channels.feishu'), 'dropped');
    assert.equal(action('channels.slack.{appToken}'), 'dropped');
    assert.equal(action('gateway'), 'dropped');
    assert.equal(action('hooks.gmail.serve'), 'copied');
    assert.equal(action('hooks.transformsDir'), 'converted');
    assert.ok(
      converted.report.every((r) => r.action !== 'dropped' || (r.note ?? '').length > 0),
      'every drop says why',
    );
  });

  it('the report never carries a secret; the file keeps references as references', () => {
    const { converted, text } = imported(OPENCLAW);
    const report = JSON.stringify(converted.report);
    for (const secret of [
      TG_TOKEN,
      'gateway-secret',
      'xapp-1-secret',
      'feishu-secret',
      'shared-push-token',
      ...Object.values(ENV),
      'xoxb-1-secret',
    ]) {
      assert.ok(!report.includes(secret), `the report carries ${secret}`);
    }
    assert.match(text, /token: "\$\{OPENCLAW_HOOKS_TOKEN\}"/);
    assert.match(text, /botToken: \{ env: "TG_WORK_TOKEN" \}/);
    assert.match(text, /botToken: \{ file: "slack-bot-token" \}/);
    assert.ok(
      !text.includes('gateway-secret') && !text.includes('xapp-1-secret'),
      'keys that were dropped are not written',
    );
  });

  it('the converted config serves requests as OpenClaw did: a static mapping key, a wake template, a transform reading ctx.url', async () => {
    const { config } = imported(OPENCLAW);
    const [gmail] = await resolveOn(config, 'gmail', {
      messages: [{ from: 'Ada', subject: 'Lunch', snippet: 'noon?' }],
    });
    assert.equal(gmail?.kind, 'agent');
    const run = (gmail as Extract<HookAction, { kind: 'agent' }>).run;
    assert.equal(run.agentId, 'hooks');
    assert.equal(run.sessionKey, 'hook:gmail:inbox');
    assert.equal(run.channel, 'telegram');
    assert.equal(run.message, 'From: Ada\nSubject: Lunch\nnoon?');
    const [wake] = await resolveOn(config, 'ci', { status: 'green', build: 42 });
    assert.deepEqual(
      [wake?.kind, (wake as { text?: string }).text, (wake as { mode?: string }).mode],
      ['wake', 'CI green 42', 'next-heartbeat'],
    );
    const [kind] = await resolveOn(config, 'kind', {}, 'kind=deploy');
    assert.equal((kind as Extract<HookAction, { kind: 'agent' }>).run.message, 'kind deploy');
  });

  it('env and file secret references, SecretRefs, and a config with no hooks at all', () => {
    const minimal = {
      hooks: { enabled: true, token: { source: 'env', provider: 'default', id: 'OPENCLAW_HOOKS_TOKEN' } },
    };
    const { config, converted } = imported(minimal);
    assert.equal(config.hooks.token, HOOK_TOKEN);
    assert.equal(config.agents.defaults.model, 'echo/echo');
    assert.equal(converted.report.find((r) => r.key === 'hooks.token')?.action, 'converted');
    const unreadable = convertOpenClaw(
      { hooks: { enabled: true, token: { source: 'exec', provider: 'vault', id: 'x' } } },
      { transforms: 'point' },
    );
    assert.match(unreadable.report.find((r) => r.key === 'hooks.token')?.note ?? '', /cannot read/);
    const none = convertOpenClaw({ agents: {} }, { transforms: 'point' });
    assert.equal(none.report[0]?.key, 'hooks');
    assert.equal(none.report[0]?.action, 'dropped');
  });

  it('a model whose provider hookgate cannot make is dropped from the agent, which then runs on the default model', () => {
    const { config, converted } = imported({
      ...OPENCLAW,
      agents: { list: [{ id: 'main', model: 'bedrock/claude' }] },
      models: { providers: { bedrock: { api: 'bedrock-converse-stream' } } },
    });
    assert.equal(config.agents.list[0]?.model, undefined);
    assert.match(
      converted.report.find((r) => r.key === 'models.providers.bedrock')?.note ?? '',
      /not one hookgate speaks/,
    );
  });
});
