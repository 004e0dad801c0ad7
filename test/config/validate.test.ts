/**
 * Cross-key rules of the config (docs/reference.md#configuration, src/config/validate.ts), with their exact messages,
 * and the helpers other modules use (channel names, agent resolution and allowlist).
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import {
  agentAllowed,
  configuredChannelIds,
  defaultAgentId,
  normalizeChannelName,
  resolveAgentId,
  startsWithAny,
} from '../../src/config/lookup.js';
import { crossCheck } from '../../src/config/validate.js';
import { normalizeHooksPath } from '../../src/config/schema/hooks.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';
import { assertIssue, issuesOf, parse } from './helpers.js';

const hooks = (h: Record<string, unknown>) => ({ hooks: { enabled: true, token: TOKEN, ...h } });
const mapping = (m: Record<string, unknown>, h: Record<string, unknown> = {}) => hooks({ ...h, mappings: [m] });

describe('hooks.enabled requires hooks.token', () => {
  it('enabled without a token is an error at hooks.token', () => {
    assertIssue({ hooks: { enabled: true } }, 'hooks.token', 'hooks.enabled requires hooks.token');
  });

  it('a blank token counts as none (tokens are trimmed)', () => {
    assertIssue({ hooks: { enabled: true, token: '   ' } }, 'hooks.token', 'hooks.enabled requires hooks.token');
    assert.equal(parse({ hooks: { enabled: true, token: `  ${TOKEN}\n` } }).hooks.token, TOKEN);
  });

  it('disabled hooks need no token, but say so in a warning', () => {
    const c = parse({});
    assert.ok(c.warnings.some((w) => w === 'hooks.enabled is not true: every request under hooks.path answers 404'));
  });

  it('a short token is a warning, not an error', () => {
    const c = parse({ hooks: { enabled: true, token: 'short' } });
    assert.ok(c.warnings.some((w) => /hooks\.token is shorter than 16 characters/.test(w)));
    assert.ok(!parse(hooks({})).warnings.some((w) => /shorter/.test(w)));
  });
});

describe('hooks.path', () => {
  const cases: Array<[string, string]> = [
    ['/hooks', '/hooks'],
    ['hooks', '/hooks'],
    ['hooks///', '/hooks'],
    ['/hooks/', '/hooks'],
    ['  /in/hooks/  ', '/in/hooks'],
    ['', '/hooks'],
    ['   ', '/hooks'],
  ];
  for (const [input, out] of cases) {
    it(`${JSON.stringify(input)} → ${out}`, () => {
      assert.equal(parse(hooks({ path: input })).hooks.path, out);
      assert.equal(normalizeHooksPath(input), out);
    });
  }

  it("'/' (and what normalises to it) is rejected", () => {
    for (const path of ['/', '///', ' / ']) {
      assertIssue(hooks({ path }), 'hooks.path', "hooks.path may not be '/'");
    }
  });
});

describe('session-key policy', () => {
  it('allowedSessionKeyPrefixes are trimmed, lower-cased, de-duplicated, blanks dropped', () => {
    const c = parse(hooks({ allowedSessionKeyPrefixes: [' Hook: ', 'hook:', '', '  ', 'AGENT:', 'agent:'] }));
    assert.deepEqual(c.hooks.allowedSessionKeyPrefixes, ['hook:', 'agent:']);
  });

  it('a list of only blanks is no restriction', () => {
    const c = parse(hooks({ allowedSessionKeyPrefixes: [' '], defaultSessionKey: 'anything' }));
    assert.deepEqual(c.hooks.allowedSessionKeyPrefixes, []);
  });

  it('defaultSessionKey must match allowedSessionKeyPrefixes', () => {
    assertIssue(
      hooks({ allowedSessionKeyPrefixes: ['agent:'], defaultSessionKey: 'hook:ingress' }),
      'hooks.defaultSessionKey',
      'hooks.defaultSessionKey must match hooks.allowedSessionKeyPrefixes',
    );
  });

  it('defaultSessionKey matching is case-insensitive', () => {
    const c = parse(hooks({ allowedSessionKeyPrefixes: ['Agent:'], defaultSessionKey: 'AGENT:ingress' }));
    assert.equal(c.hooks.defaultSessionKey, 'AGENT:ingress');
  });

  it("without a defaultSessionKey the prefixes must admit 'hook:'", () => {
    assertIssue(
      hooks({ allowedSessionKeyPrefixes: ['agent:'] }),
      'hooks.allowedSessionKeyPrefixes',
      "hooks.allowedSessionKeyPrefixes must include 'hook:' when hooks.defaultSessionKey is unset",
    );
    parse(hooks({ allowedSessionKeyPrefixes: ['agent:', 'hook:'] }));
    parse(hooks({ allowedSessionKeyPrefixes: ['HOOK:'] }));
    parse(hooks({ allowedSessionKeyPrefixes: ['hook'] }));
  });

  it("with a matching defaultSessionKey the prefixes need not admit 'hook:'", () => {
    const c = parse(hooks({ allowedSessionKeyPrefixes: ['agent:'], defaultSessionKey: 'agent:main' }));
    assert.deepEqual(c.hooks.allowedSessionKeyPrefixes, ['agent:']);
  });

  it('a templated mapping sessionKey requires allowedSessionKeyPrefixes, even with allowRequestSessionKey', () => {
    for (const extra of [{}, { allowRequestSessionKey: true }]) {
      assertIssue(
        mapping({ messageTemplate: 'm', sessionKey: 'hook:github:{{payload.id}}' }, extra),
        'hooks.mappings[0].sessionKey',
        'hooks.allowedSessionKeyPrefixes is required when a hook mapping sessionKey uses templates',
      );
    }
    parse(
      mapping(
        { messageTemplate: 'm', sessionKey: 'hook:github:{{payload.id}}' },
        { allowedSessionKeyPrefixes: ['hook:'], allowRequestSessionKey: true },
      ),
    );
  });

  it('a static mapping sessionKey outside the prefixes is an error; inside (any case) is fine', () => {
    assertIssue(
      mapping({ messageTemplate: 'm', sessionKey: 'agent:x' }, { allowedSessionKeyPrefixes: ['hook:'] }),
      'hooks.mappings[0].sessionKey',
      'sessionKey must start with one of: hook:',
    );
    parse(mapping({ messageTemplate: 'm', sessionKey: 'HOOK:x' }, { allowedSessionKeyPrefixes: ['hook:'] }));
  });

  it('a static mapping sessionKey needs no prefixes', () => {
    const c = parse(mapping({ messageTemplate: 'm', sessionKey: 'anything:1' }));
    assert.equal(c.hooks.mappings[0]!.sessionKey, 'anything:1');
  });

  it('the gmail preset (templated session key) requires allowedSessionKeyPrefixes, unless a custom mapping shadows it', () => {
    // The preset's key is hookgate's own template in a fixed namespace: no prefixes or opt-in needed...
    parse(hooks({ presets: ['gmail'] }));
    parse(hooks({ presets: ['gmail'], allowedSessionKeyPrefixes: ['hook:'] }));
    parse(hooks({ presets: ['gmail'], mappings: [{ match: { path: '/gmail/' }, messageTemplate: 'm' }] }));
  });
});

describe('mappings', () => {
  // A config dir with a real transform module: transform paths are checked when the config loads.
  let withTransform: string;
  before(() => {
    withTransform = tempDir('hookgate-validate-');
    mkdirSync(join(withTransform, 'hooks/transforms'), { recursive: true });
    writeFileSync(join(withTransform, 'hooks/transforms/x.mjs'), 'export default () => null;\n');
  });

  it('an agent mapping needs messageTemplate or a transform', () => {
    assertIssue(
      mapping({}),
      'hooks.mappings[0].messageTemplate',
      'an agent mapping needs messageTemplate or a transform',
    );
    assertIssue(mapping({ messageTemplate: '' }), 'hooks.mappings[0].messageTemplate');
    assertIssue(mapping({ textTemplate: 't' }), 'hooks.mappings[0].messageTemplate');
    parse(mapping({ messageTemplate: 'm' }));
    parse(mapping({ transform: { module: 'x.mjs' } }), {}, withTransform);
  });

  it('a wake mapping needs textTemplate or a transform', () => {
    assertIssue(
      mapping({ action: 'wake' }),
      'hooks.mappings[0].textTemplate',
      'a wake mapping needs textTemplate or a transform',
    );
    assertIssue(mapping({ action: 'wake', messageTemplate: 'm' }), 'hooks.mappings[0].textTemplate');
    parse(mapping({ action: 'wake', textTemplate: 't' }));
    parse(mapping({ action: 'wake', transform: { module: 'x.mjs', export: 'wake' } }), {}, withTransform);
  });

  it('each mapping is checked, by index', () => {
    const issues = issuesOf(hooks({ mappings: [{ messageTemplate: 'm' }, {}, { action: 'wake' }] }));
    assert.deepEqual(
      issues.map((i) => i.path),
      ['hooks.mappings[1].messageTemplate', 'hooks.mappings[2].textTemplate'],
    );
  });

  it('a mapping agentId outside hooks.allowedAgentIds is an error', () => {
    const cfg = (allowedAgentIds: string[]) => ({
      ...mapping({ messageTemplate: 'm', agentId: 'ops' }, { allowedAgentIds }),
      agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
    });
    assertIssue(cfg(['main']), 'hooks.mappings[0].agentId', 'agent "ops" is not allowed by hooks.allowedAgentIds');
    assertIssue(cfg([]), 'hooks.mappings[0].agentId');
    parse(cfg(['ops']));
    parse(cfg(['*']));
  });
});

describe('admin and tokens', () => {
  it('admin.enabled requires admin.token', () => {
    assertIssue({ admin: { enabled: true } }, 'admin.token', 'admin.enabled requires admin.token');
    assertIssue({ admin: { enabled: true, token: ' ' } }, 'admin.token', 'admin.enabled requires admin.token');
    const c = parse({ admin: { enabled: true, token: 'admin-token-0123456789' } });
    assert.equal(c.admin.enabled, true);
  });

  it('admin.port may not be the hooks port; the token may be a secret reference like hooks.token', () => {
    assertIssue(
      { gateway: { port: 18800 }, admin: { enabled: true, token: 'admin-token-0123456789', port: 18800 } },
      'admin.port',
      'must differ from gateway.port (18800): the admin listener never shares the hooks port',
    );
    assert.equal(
      parse({ gateway: { port: 18800 }, admin: { enabled: false, port: 18800 } }).admin.enabled,
      false,
      'disabled: no listener, no conflict',
    );
    const c = parse(
      { admin: { enabled: true, token: { env: 'HG_ADMIN_TEST' } } },
      { HG_ADMIN_TEST: 'admin-from-env-0123456789' },
    );
    assert.equal(c.admin.token, 'admin-from-env-0123456789');
    const d = parse(
      { admin: { enabled: true, token: '${HG_ADMIN_TEST}' } },
      { HG_ADMIN_TEST: 'admin-from-env-0123456789' },
    );
    assert.equal(d.admin.token, 'admin-from-env-0123456789');
  });

  it('hooks.token equal to admin.token is a warning, not an error', () => {
    const c = parse({ hooks: { enabled: true, token: TOKEN }, admin: { enabled: true, token: TOKEN } });
    assert.ok(
      c.warnings.some((w) =>
        w.startsWith('hooks.token equals admin.token: use a dedicated hook token (`hookgate token`)'),
      ),
    );
  });

  it('no channels.default while hooks are on: a warning that replies for `last` have nowhere to go', () => {
    const c = parse({ hooks: { enabled: true, token: TOKEN } });
    assert.ok(
      c.warnings.some((w) => w.startsWith('channels.default is not set: replies for `last`')),
      c.warnings.join('\n'),
    );
    assert.deepEqual(
      parse({}).warnings.filter((w) => w.startsWith('channels.default')),
      [],
      'hooks off: nothing to route',
    );
  });

  it('different tokens: no such warning', () => {
    const c = parse({
      hooks: { enabled: true, token: TOKEN },
      admin: { enabled: true, token: 'admin-token-0123456789' },
      channels: { default: { channel: 'log' } },
    });
    assert.deepEqual(c.warnings, []);
  });
});

describe('agents', () => {
  it('duplicate agent ids are an error at the later one (ids are case-insensitive)', () => {
    assertIssue(
      { agents: { list: [{ id: 'main' }, { id: 'ops' }, { id: 'main' }] } },
      'agents.list[2].id',
      'duplicate agent id "main"',
    );
    assertIssue(
      { agents: { list: [{ id: 'Main' }, { id: 'main' }] } },
      'agents.list[1].id',
      'duplicate agent id "main"',
    );
  });

  it('at most one default agent', () => {
    assertIssue(
      {
        agents: {
          list: [
            { id: 'a', default: true },
            { id: 'b', default: true },
          ],
        },
      },
      'agents.list',
      'at most one agent may be marked default: true',
    );
  });

  it('agent ids are letters, digits, - and _ (lower-cased)', () => {
    assert.equal(parse({ agents: { list: [{ id: ' Ops_1 ' }] } }).agents.list[0]!.id, 'ops_1');
    for (const id of ['has space', '-lead', 'a/b', '']) {
      assertIssue({ agents: { list: [{ id }] } }, 'agents.list[0].id');
    }
  });

  it('the default agent is the one marked default, else the first', () => {
    assert.equal(defaultAgentId(parse({ agents: { list: [{ id: 'a' }, { id: 'b', default: true }] } })), 'b');
    assert.equal(defaultAgentId(parse({ agents: { list: [{ id: 'a' }, { id: 'b' }] } })), 'a');
    assert.equal(defaultAgentId(parse({})), 'main');
  });

  it('resolveAgentId: known ids (any case) resolve; unknown ids fall back to the default', () => {
    const c = parse({ agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] } });
    assert.equal(resolveAgentId('ops', c), 'ops');
    assert.equal(resolveAgentId(' OPS ', c), 'ops');
    assert.equal(resolveAgentId('nobody', c), 'main');
    assert.equal(resolveAgentId(undefined, c), 'main');
  });

  it('agentAllowed: omitted or "*" allows all, [] denies all, else checked against the agent actually used', () => {
    const agents = { list: [{ id: 'main', default: true }, { id: 'ops' }] };
    const c = (allowedAgentIds?: string[]) => parse({ agents, hooks: allowedAgentIds ? { allowedAgentIds } : {} });
    assert.equal(agentAllowed('ops', c()), true);
    assert.equal(agentAllowed('ops', c(['*'])), true);
    assert.equal(agentAllowed(undefined, c([])), false);
    assert.equal(agentAllowed('main', c([])), false);
    assert.equal(agentAllowed('ops', c(['main'])), false);
    assert.equal(agentAllowed('main', c(['main'])), true);
    assert.equal(agentAllowed('ops', c(['OPS'])), true);
    // An unknown id runs as the default agent: allowed exactly when the default agent is.
    assert.equal(agentAllowed('nobody', c(['main'])), true);
    assert.equal(agentAllowed('nobody', c(['ops'])), false);
  });
});

describe('channels', () => {
  const imessage = { serverUrl: 'http://127.0.0.1:1234', password: 'p' };
  const msteams = { appId: 'app', appPassword: 'secret' };
  const googlechat = { accessToken: 'ya29.token' };

  it('channels.default naming an unconfigured channel is an error listing the configured ones', () => {
    assertIssue(
      { channels: { default: { channel: 'telegram', to: '1' } } },
      'channels.default.channel',
      'channel "telegram" is not configured (configured: last, log)',
    );
    assertIssue({ channels: { default: { channel: 'matrix' } } }, 'channels.default.channel', /not configured/);
  });

  it('channels.default may not be "last" (in any case)', () => {
    for (const channel of ['last', 'LAST', ' last ']) {
      assertIssue(
        { channels: { default: { channel } } },
        'channels.default.channel',
        'channels.default must name a concrete channel, not "last"',
      );
    }
  });

  it('the log channel is always configured; webhook only with its section', () => {
    parse({ channels: { default: { channel: 'log' } } });
    assertIssue({ channels: { default: { channel: 'webhook', to: 'ops' } } }, 'channels.default.channel');
    parse({ channels: { default: { channel: 'webhook', to: 'ops' }, webhook: { targets: {} } } });
  });

  it('aliases imsg, teams, google-chat name imessage, msteams, googlechat', () => {
    parse({ channels: { default: { channel: 'imsg', to: 'x' }, imessage } });
    parse({ channels: { default: { channel: 'teams', to: 'x' }, msteams } });
    parse({ channels: { default: { channel: 'Google-Chat', to: 'x' }, googlechat } });
    assertIssue(
      { channels: { default: { channel: 'imsg' } } },
      'channels.default.channel',
      /channel "imsg" is not configured/,
    );
    assertIssue({ channels: { default: { channel: 'teams' } } }, 'channels.default.channel');
    assertIssue({ channels: { default: { channel: 'google-chat' } } }, 'channels.default.channel');
  });

  it('normalizeChannelName trims, lower-cases and resolves aliases', () => {
    assert.equal(normalizeChannelName(' IMSG '), 'imessage');
    assert.equal(normalizeChannelName('teams'), 'msteams');
    assert.equal(normalizeChannelName('google-chat'), 'googlechat');
    assert.equal(normalizeChannelName('Telegram'), 'telegram');
    assert.equal(normalizeChannelName('last'), 'last');
  });

  it('a mapping channel must be configured (aliases and "last" accepted; templates skipped)', () => {
    assertIssue(
      mapping({ messageTemplate: 'm', channel: 'slack' }),
      'hooks.mappings[0].channel',
      /channel "slack" is not configured/,
    );
    parse(mapping({ messageTemplate: 'm', channel: 'last' }));
    parse(mapping({ messageTemplate: 'm', channel: 'log' }));
    parse({ ...mapping({ messageTemplate: 'm', channel: 'imsg' }), channels: { imessage } });
    parse(mapping({ messageTemplate: 'm', channel: '{{payload.channel}}' }));
  });

  it('with plugins, an unknown extension name may be a plugin channel; an unconfigured core platform is still an error', () => {
    parse({ channels: { default: { channel: 'matrix' }, plugins: ['./matrix.mjs'] } });
    assertIssue({ channels: { default: { channel: 'slack' }, plugins: ['./matrix.mjs'] } }, 'channels.default.channel');
  });

  it('configuredChannelIds: core platforms with a section, webhook with its section, log always', () => {
    assert.deepEqual(configuredChannelIds(parse({})), ['log']);
    assert.deepEqual(configuredChannelIds(parse({ channels: { imessage, msteams, webhook: {} } })), [
      'imessage',
      'msteams',
      'webhook',
      'log',
    ]);
  });

  it('aliases are for channel names, not section keys', () => {
    assertIssue({ channels: { teams: msteams } }, 'channels', /unknown key/);
  });

  it('every platform channel takes apiBaseUrl (or serverUrl) for a proxy or a stand-in', () => {
    const c = parse({ channels: { msteams: { ...msteams, apiBaseUrl: 'http://127.0.0.1:9000' } } });
    assert.ok(c.channels.msteams);
  });
});

describe('crossCheck and helpers', () => {
  it('crossCheck is pure: it returns issues and warnings, and throws nothing', () => {
    const c = parse({ ...hooks({}), channels: { default: { channel: 'log' } } });
    const bad = { ...c, hooks: { ...c.hooks, enabled: true, token: undefined, path: '/' } };
    const { issues, warnings } = crossCheck(bad);
    assert.deepEqual(
      issues.map((i) => i.path),
      ['hooks.token', 'hooks.path'],
    );
    assert.deepEqual(warnings, []);
  });

  it('startsWithAny compares case-insensitively against lower-case prefixes', () => {
    assert.equal(startsWithAny('HOOK:x', ['hook:']), true);
    assert.equal(startsWithAny('agent:x', ['hook:']), false);
    assert.equal(startsWithAny('x', []), false);
  });
});
