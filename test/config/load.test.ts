/**
 * The config loader: JSON5 parsing, unknown keys, every problem at once by key path, the defaults of every section,
 * the value rules of single keys (ports, durations, trusted proxies, enums), files and where they are found.
 * Cross-key rules are in validate.test.ts, `${ENV}` and secrets in interpolate.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import {
  configPath,
  findConfigFile,
  loadConfigFile,
  loadStorageConfig,
  locateConfigFile,
  parseConfig,
  validateConfig,
} from '../../src/config/load.js';
import { DEFAULT_HEARTBEAT_PROMPT } from '../../src/config/schema/index.js';
import { ConfigError, formatIssues, keyPath } from '../../src/errors.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';
import { assertIssue, configError, issuesOf, NO_DIR, parse } from './helpers.js';

describe('JSON5 parsing', () => {
  it('accepts JSON5: comments, unquoted keys, single quotes, trailing commas, hex numbers', () => {
    const c = parse(`// a comment
      {
        /* block comment */
        gateway: { bind: '0.0.0.0', port: 0x2000, },
        hooks: { enabled: true, token: '${TOKEN}', },
      }`);
    assert.equal(c.gateway.bind, '0.0.0.0');
    assert.equal(c.gateway.port, 8192);
    assert.equal(c.hooks.token, TOKEN);
  });

  it('an empty (or blank) file is an empty config: every default', () => {
    for (const text of ['', '  \n\t\n']) {
      const c = parse(text);
      assert.equal(c.gateway.port, 18789);
      assert.equal(c.hooks.path, '/hooks');
    }
  });

  it('a syntax error is one problem at the root, saying "not valid JSON5" with the position', () => {
    for (const text of ['{ a: ', '{ hooks: { enabled: true } } }', '{ "a": 1 "b": 2 }', 'hooks: {}']) {
      const err = configError(() => parse(text));
      assert.equal(err.issues.length, 1, text);
      assert.equal(err.issues[0]!.path, '');
      assert.match(err.issues[0]!.message, /^not valid JSON5: .*\d+:\d+/, text);
    }
  });

  it('the error message names the file and prints every problem under it', () => {
    const err = configError(() => parseConfig('{ a: ', '/etc/hookgate.json5', '/etc', { env: {} }));
    assert.match(err.message, /^invalid config \/etc\/hookgate\.json5:\n {2}\(root\): not valid JSON5/);
  });

  it('a JSON value that is not an object is rejected', () => {
    for (const text of ['[]', '[1, 2]', '42', '"text"', 'null', 'true']) {
      const err = configError(() => parse(text));
      assert.deepEqual(err.issues, [{ path: '', message: 'the config must be an object' }], text);
    }
  });
});

describe('unknown keys are rejected by key path', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['root', { bogus: 1 }, ''],
    ['gateway', { gateway: { host: 'x' } }, 'gateway'],
    ['storage (sqlite)', { storage: { path: './x.db', url: 'postgres://x' } }, 'storage'],
    ['storage (postgres)', { storage: { driver: 'postgres', url: 'postgres://x', path: './x.db' } }, 'storage'],
    ['hooks', { hooks: { tokn: 'x' } }, 'hooks'], // `tokens` is a key (hooks.tokens): a near miss is not
    ['hooks.authFailureLimit', { hooks: { authFailureLimit: { max: 1 } } }, 'hooks.authFailureLimit'],
    ['hooks.gmail', { hooks: { gmail: { accountName: 'x' } } }, 'hooks.gmail'],
    ['a mapping', { hooks: { mappings: [{ messageTemplate: 'm', bogus: true }] } }, 'hooks.mappings[0]'],
    [
      'a later mapping',
      { hooks: { mappings: [{ messageTemplate: 'm' }, { messageTemplate: 'm', bogus: 1 }] } },
      'hooks.mappings[1]',
    ],
    [
      'mapping.match',
      { hooks: { mappings: [{ messageTemplate: 'm', match: { path: 'a', method: 'POST' } }] } },
      'hooks.mappings[0].match',
    ],
    [
      'mapping.transform',
      { hooks: { mappings: [{ transform: { module: 'a.mjs', fn: 'x' } }] } },
      'hooks.mappings[0].transform',
    ],
    [
      'mapping.signature',
      { hooks: { mappings: [{ messageTemplate: 'm', signature: { scheme: 'github', secret: 's', algo: 'sha1' } }] } },
      'hooks.mappings[0].signature',
    ],
    ['agents', { agents: { main: {} } }, 'agents'],
    ['agents.defaults', { agents: { defaults: { temperature: 1 } } }, 'agents.defaults'],
    ['an agent', { agents: { list: [{ id: 'main', prompt: 'x' }] } }, 'agents.list[0]'],
    ['models', { models: { aliases: {} } }, 'models'],
    [
      'a provider',
      { models: { providers: { local: { api: 'openai-chat', url: 'http://x' } } } },
      'models.providers.local',
    ],
    ['heartbeat', { heartbeat: { interval: '5m' } }, 'heartbeat'],
    ['channels', { channels: { matrix: {} } }, 'channels'],
    ['channels.default', { channels: { default: { channel: 'log', target: 'x' } } }, 'channels.default'],
    ['channels.log', { channels: { log: { file: 'x.jsonl', level: 1 } } }, 'channels.log'],
    ['admin', { admin: { user: 'x' } }, 'admin'],
    ['logging', { logging: { format: 'json' } }, 'logging'],
  ];
  for (const [name, input, path] of cases) {
    it(`in ${name}`, () => {
      assertIssue(input, path, /^unknown keys?: /);
    });
  }

  it('names the key, as `hooks.mappings[0]: unknown key: bogus`', () => {
    const err = configError(() => parse({ hooks: { mappings: [{ messageTemplate: 'm', bogus: true }] } }));
    assert.deepEqual(err.issues, [{ path: 'hooks.mappings[0]', message: 'unknown key: bogus' }]);
    assert.match(err.message, /^ {2}hooks\.mappings\[0\]: unknown key: bogus$/m);
  });

  it('several unknown keys of one object are listed together', () => {
    assert.deepEqual(issuesOf({ bogus: 1, other: 2 }), [{ path: '', message: 'unknown keys: bogus, other' }]);
  });
});

describe('every problem is reported at once, by key path', () => {
  it('problems of the schema in different sections', () => {
    const issues = issuesOf({
      bogus: 1,
      gateway: { port: 'x', trustedProxies: ['nope'] },
      hooks: { agentAcceptedStatus: 201, mappings: [{ messageTemplate: 'm', bogus: true }] },
      heartbeat: { every: 'soon' },
      logging: { level: 'loud' },
    });
    const paths = issues.map((i) => i.path).sort();
    assert.deepEqual(paths, [
      '',
      'gateway.port',
      'gateway.trustedProxies[0]',
      'heartbeat.every',
      'hooks.agentAcceptedStatus',
      'hooks.mappings[0]',
      'logging.level',
    ]);
  });

  it('cross-key problems together', () => {
    const issues = issuesOf({
      hooks: { enabled: true, path: '/', allowedSessionKeyPrefixes: ['agent:'] },
      admin: { enabled: true },
      agents: { list: [{ id: 'a' }, { id: 'a' }] },
    });
    assert.deepEqual(issues.map((i) => i.path).sort(), [
      'admin.token',
      'agents.list[1].id',
      'hooks.allowedSessionKeyPrefixes',
      'hooks.path',
      'hooks.token',
    ]);
  });

  it('unset variables together with schema problems', () => {
    const issues = issuesOf({ hooks: { token: '${NOPE_A}' }, admin: { token: '${NOPE_B}' }, gateway: { port: -1 } });
    assert.deepEqual(issues.map((i) => i.path).sort(), ['admin.token', 'gateway.port', 'hooks.token']);
  });

  it('unset variables together with cross-key problems', () => {
    const issues = issuesOf({ hooks: { token: '${NOPE_A}' }, admin: { enabled: true } });
    assert.ok(issues.some((i) => i.path === 'hooks.token' && /NOPE_A is not set/.test(i.message)));
    assert.ok(issues.some((i) => i.path === 'admin.token' && i.message === 'admin.enabled requires admin.token'));
  });

  it('schema problems together with cross-key problems', () => {
    const issues = issuesOf({ gateway: { port: 'x' }, hooks: { enabled: true } });
    assert.deepEqual(issues.map((i) => i.path).sort(), ['gateway.port', 'hooks.token']);
  });

  it('the same problem is not listed twice', () => {
    const issues = issuesOf({ hooks: { token: '${NOPE} and ${NOPE}' } });
    assert.deepEqual(issues, [{ path: 'hooks.token', message: 'environment variable NOPE is not set' }]);
  });
});

describe('defaults of every section', () => {
  const c = parse({});

  it('gateway: 127.0.0.1:18789, no trusted proxies, connection limits', () => {
    assert.deepEqual(c.gateway, {
      bind: '127.0.0.1',
      port: 18789,
      trustedProxies: [],
      stopGraceSeconds: 10,
      limits: {
        headersTimeoutMs: 10_000,
        requestTimeoutMs: 60_000,
        keepAliveTimeoutMs: 5000,
        maxConnections: 512,
        maxConnectionsPerAddress: 64,
      },
    });
  });

  it('gateway.limits: the header time within the request time, the per-address cap within the total', () => {
    const paths = (limits: Record<string, unknown>) => issuesOf({ gateway: { limits } }).map((i) => i.path);
    assert.deepEqual(paths({ headersTimeoutMs: 70_000 }), ['gateway.limits.headersTimeoutMs']);
    assert.deepEqual(paths({ maxConnections: 10, maxConnectionsPerAddress: 11 }), [
      'gateway.limits.maxConnectionsPerAddress',
    ]);
    assert.ok(paths({ maxConnections: 0 }).includes('gateway.limits.maxConnections'));
    assert.equal(
      parse({
        gateway: {
          limits: { headersTimeoutMs: 500, requestTimeoutMs: 1000, maxConnections: 4, maxConnectionsPerAddress: 2 },
        },
      }).gateway.limits.maxConnections,
      4,
    );
  });

  it('storage: sqlite at ./data/hookgate.db', () => {
    assert.deepEqual(c.storage, {
      driver: 'sqlite',
      path: './data/hookgate.db',
      synchronous: 'normal',
      checkpoints: 'auto',
    });
  });

  it('hooks', () => {
    const h = c.hooks;
    assert.equal(h.enabled, false);
    assert.equal(h.token, undefined);
    assert.equal(h.path, '/hooks');
    assert.equal(h.maxBodyBytes, 262144);
    assert.equal(h.bodyTimeoutMs, 30000);
    assert.equal(h.allowedAgentIds, undefined);
    assert.equal(h.defaultSessionKey, undefined);
    assert.equal(h.allowRequestSessionKey, false);
    assert.equal(h.allowedSessionKeyPrefixes, undefined);
    assert.deepEqual(h.presets, []);
    assert.deepEqual(h.mappings, []);
    assert.equal(h.transformsDir, undefined);
    assert.deepEqual(h.gmail, {
      pushPath: 'gmail-push',
      labels: ['INBOX'],
      includeBody: true,
      maxBodyChars: 20000,
      renewEveryHours: 24,
      gmailApiBaseUrl: 'https://gmail.googleapis.com',
      tokenUrl: 'https://oauth2.googleapis.com/token',
      jwksUrl: 'https://www.googleapis.com/oauth2/v3/certs',
      maxBytes: 20000,
    });
    assert.deepEqual(h.authFailureLimit, {
      maxFailures: 20,
      windowSeconds: 60,
      lockoutSeconds: 60,
      maxTrackedClients: 10000,
    });
    assert.equal(h.idempotencyTtlSeconds, 86400);
    assert.equal(h.agentAcceptedStatus, 200);
    assert.equal(h.maxFanOut, 200);
    assert.equal(h.receivedRetentionDays, 7);
    assert.equal(h.runRetentionDays, 7);
    assertIssue({ hooks: { runRetentionDays: 0 } }, 'hooks.runRetentionDays');
  });

  it('a partly given authFailureLimit keeps the other defaults', () => {
    assert.deepEqual(parse({ hooks: { authFailureLimit: { maxFailures: 5 } } }).hooks.authFailureLimit, {
      maxFailures: 5,
      windowSeconds: 60,
      lockoutSeconds: 60,
      maxTrackedClients: 10000,
    });
  });

  it('a mapping: action agent, wakeMode now, deliver true, safety wrapper on', () => {
    const m = parse({ hooks: { mappings: [{ messageTemplate: 'm' }] } }).hooks.mappings[0]!;
    assert.equal(m.action, 'agent');
    assert.equal(m.wakeMode, 'now');
    assert.equal(m.deliver, true);
    assert.equal(m.allowUnsafeExternalContent, false);
  });

  it('agents: echo/echo, 600 s, one default agent "main"', () => {
    assert.deepEqual(c.agents, {
      defaults: {
        model: 'echo/echo',
        timeoutSeconds: 600,
        maxConcurrent: 4,
        retry: { maxSeconds: 1800, initialBackoffMs: 5000, maxBackoffMs: 300_000 },
      },
      list: [{ id: 'main', default: true }],
    });
  });

  it('models: no providers besides the built-in echo', () => {
    assert.deepEqual(c.models, { providers: {} });
  });

  it('heartbeat: every 30 minutes, the default prompt, ackMaxChars 300', () => {
    assert.deepEqual(c.heartbeat, { every: 30 * 60_000, prompt: DEFAULT_HEARTBEAT_PROMPT, ackMaxChars: 300 });
    assert.match(DEFAULT_HEARTBEAT_PROMPT, /HEARTBEAT_OK/);
  });

  it('channels: none configured, no default, no plugins, outbox retry defaults', () => {
    assert.deepEqual(c.channels, {
      plugins: [],
      outbox: { maxAttempts: 15, initialBackoffMs: 2_000, maxBackoffMs: 30 * 60_000, concurrency: 8 },
    });
  });

  it('admin: disabled, 127.0.0.1:18790', () => {
    assert.deepEqual(c.admin, { enabled: false, bind: '127.0.0.1', port: 18790 });
  });

  it('logging: info; the audit trail kept 90 days', () => {
    assert.deepEqual(c.logging, { level: 'info', auditRetentionDays: 90 });
  });

  it('the Config records where it came from', () => {
    assert.equal(c.file, undefined);
    assert.equal(c.dir, NO_DIR);
    assert.ok(Array.isArray(c.warnings));
  });
});

describe('storage', () => {
  it('driver defaults to sqlite: `storage: { path }` is enough', () => {
    assert.deepEqual(parse({ storage: { path: './other.db' } }).storage, {
      driver: 'sqlite',
      path: './other.db',
      synchronous: 'normal',
      checkpoints: 'auto',
    });
    assert.deepEqual(parse({ storage: {} }).storage, {
      driver: 'sqlite',
      path: './data/hookgate.db',
      synchronous: 'normal',
      checkpoints: 'auto',
    });
  });

  it('synchronous is normal or full', () => {
    assert.deepEqual(parse({ storage: { synchronous: 'full', checkpoints: 'auto' } }).storage, {
      driver: 'sqlite',
      path: './data/hookgate.db',
      synchronous: 'full',
      checkpoints: 'auto',
    });
    assertIssue({ storage: { synchronous: 'off' } }, 'storage.synchronous');
  });

  it('checkpoints is auto (SQLite on the writing connection) or thread', () => {
    assert.equal(
      (parse({ storage: { checkpoints: 'thread' } }).storage as { checkpoints: string }).checkpoints,
      'thread',
    );
    assertIssue({ storage: { checkpoints: 'never' } }, 'storage.checkpoints');
  });

  it('postgres needs url; poolSize defaults to 10', () => {
    assert.deepEqual(parse({ storage: { driver: 'postgres', url: 'postgres://u@h/db' } }).storage, {
      driver: 'postgres',
      url: 'postgres://u@h/db',
      poolSize: 10,
    });
    assertIssue({ storage: { driver: 'postgres' } }, 'storage.url');
  });

  it('an unknown driver is rejected at storage.driver', () => {
    assertIssue({ storage: { driver: 'mysql' } }, 'storage.driver');
  });

  it('a blank sqlite path is rejected', () => {
    assertIssue({ storage: { path: '  ' } }, 'storage.path', 'must be a non-empty string');
  });
});

describe('gateway', () => {
  it('port is an integer 0..65535', () => {
    assert.equal(parse({ gateway: { port: 0 } }).gateway.port, 0);
    assert.equal(parse({ gateway: { port: 65535 } }).gateway.port, 65535);
    for (const port of [-1, 65536, 1.5, '8080']) assertIssue({ gateway: { port } }, 'gateway.port');
  });

  it('a blank bind is rejected', () => {
    assertIssue({ gateway: { bind: '' } }, 'gateway.bind');
  });

  it('trustedProxies accept IPv4/IPv6 addresses and CIDR blocks (trimmed)', () => {
    const list = [
      '10.1.2.3',
      ' 192.168.0.0/16 ',
      '0.0.0.0/0',
      '10.0.0.0/32',
      '::1',
      'fe80::/10',
      '2001:db8::/128',
      '::/0',
    ];
    assert.deepEqual(
      parse({ gateway: { trustedProxies: list } }).gateway.trustedProxies,
      list.map((s) => s.trim()),
    );
  });

  it('trustedProxies reject anything else, each by index', () => {
    const bad = [
      'garbage',
      'localhost',
      '10.0.0.0/33',
      '::1/129',
      '10.0.0.0/',
      '10.0.0.0/8/1',
      '10.0.0/8',
      '/8',
      '10.0.0.0/-1',
      '10.0.0.0/x',
      '',
      '1.2.3.4.5',
    ];
    const issues = issuesOf({ gateway: { trustedProxies: ['10.0.0.1', ...bad] } });
    assert.deepEqual(
      issues.map((i) => i.path),
      bad.map((_, i) => `gateway.trustedProxies[${i + 1}]`),
    );
    for (const i of issues) assert.equal(i.message, 'must be an IP address or CIDR block like 10.0.0.0/8');
  });
});

describe('durations (heartbeat.every)', () => {
  const cases: Array<[string | number, number]> = [
    ['30s', 30_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['500ms', 500],
    ['1.5h', 5_400_000],
    [' 5M ', 300_000],
    ['off', 0],
    ['OFF', 0],
    ['0', 0],
    [0, 0],
    [1500, 1500],
  ];
  for (const [input, ms] of cases) {
    it(`${JSON.stringify(input)} → ${ms} ms`, () => {
      assert.equal(parse({ heartbeat: { every: input } }).heartbeat.every, ms);
    });
  }

  it('rejects anything else with a message naming the accepted forms', () => {
    for (const every of ['soon', '5 minutes', '5', '-5s', '5w', '', 'm5', -1]) {
      assertIssue({ heartbeat: { every } }, 'heartbeat.every', /expected a duration like "30s", "5m", "1h" or "off"/);
    }
    // JSON5 has NaN and Infinity: not durations either (zod rejects them as numbers, hence a generic message).
    assertIssue('{ heartbeat: { every: NaN } }', 'heartbeat.every');
    assertIssue('{ heartbeat: { every: Infinity } }', 'heartbeat.every');
    assertIssue({ heartbeat: { every: true } }, 'heartbeat.every');
  });
});

describe('single-key value rules', () => {
  it('agentAcceptedStatus is 200 or 202, nothing else', () => {
    assert.equal(parse({ hooks: { agentAcceptedStatus: 202 } }).hooks.agentAcceptedStatus, 202);
    assert.equal(parse({ hooks: { agentAcceptedStatus: 200 } }).hooks.agentAcceptedStatus, 200);
    for (const s of [201, 204, 0, '202', null])
      assertIssue({ hooks: { agentAcceptedStatus: s } }, 'hooks.agentAcceptedStatus');
  });

  it('limits are positive integers', () => {
    for (const [key, value] of [
      ['maxBodyBytes', 0],
      ['maxBodyBytes', -1],
      ['bodyTimeoutMs', 1.5],
      ['idempotencyTtlSeconds', 0],
      ['maxFanOut', 0],
    ] as const) {
      assertIssue({ hooks: { [key]: value } }, `hooks.${key}`);
    }
    for (const key of ['maxFailures', 'windowSeconds', 'lockoutSeconds']) {
      assertIssue({ hooks: { authFailureLimit: { [key]: 0 } } }, `hooks.authFailureLimit.${key}`);
    }
  });

  it('booleans must be booleans (no "true" strings)', () => {
    assertIssue({ hooks: { enabled: 'true', token: TOKEN } }, 'hooks.enabled');
    assertIssue({ hooks: { allowRequestSessionKey: 1 } }, 'hooks.allowRequestSessionKey');
    assertIssue({ admin: { enabled: 'yes' } }, 'admin.enabled');
  });

  it('presets: only "gmail"', () => {
    assertIssue({ hooks: { presets: ['github'] } }, 'hooks.presets[0]');
  });

  it('mapping fields: action, wakeMode, timeoutSeconds, forEach', () => {
    assertIssue({ hooks: { mappings: [{ messageTemplate: 'm', action: 'run' }] } }, 'hooks.mappings[0].action');
    assertIssue({ hooks: { mappings: [{ messageTemplate: 'm', wakeMode: 'later' }] } }, 'hooks.mappings[0].wakeMode');
    assertIssue(
      { hooks: { mappings: [{ messageTemplate: 'm', timeoutSeconds: 0 }] } },
      'hooks.mappings[0].timeoutSeconds',
    );
    assertIssue({ hooks: { mappings: [{ messageTemplate: 'm', forEach: 'a.b' }] } }, 'hooks.mappings[0].forEach');
    assertIssue({ hooks: { mappings: [{ messageTemplate: 'm', forEach: '__proto__' }] } }, 'hooks.mappings[0].forEach');
    assertIssue({ hooks: { mappings: [{ transform: { module: '' } }] } }, 'hooks.mappings[0].transform.module');
  });

  it('mapping match.path is normalised (no leading/trailing slashes)', () => {
    const m = parse({ hooks: { mappings: [{ messageTemplate: 'm', match: { path: ' /github/ ' } }] } }).hooks
      .mappings[0]!;
    assert.equal(m.match?.path, 'github');
  });

  it('logging.level is one of the pino levels', () => {
    for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']) {
      assert.equal(parse({ logging: { level } }).logging.level, level);
    }
    assertIssue({ logging: { level: 'loud' } }, 'logging.level');
  });

  it('heartbeat.ackMaxChars is an integer ≥ 0; the prompt is not blank', () => {
    assert.equal(parse({ heartbeat: { ackMaxChars: 0 } }).heartbeat.ackMaxChars, 0);
    assertIssue({ heartbeat: { ackMaxChars: -1 } }, 'heartbeat.ackMaxChars');
    assertIssue({ heartbeat: { prompt: ' ' } }, 'heartbeat.prompt');
  });

  it('agents: at least one; timeoutSeconds positive', () => {
    assertIssue({ agents: { list: [] } }, 'agents.list', 'at least one agent');
    assertIssue({ agents: { defaults: { timeoutSeconds: 0 } } }, 'agents.defaults.timeoutSeconds');
    assertIssue({ agents: { list: [{ id: 'main', timeoutSeconds: -1 }] } }, 'agents.list[0].timeoutSeconds');
  });

  it('channels.plugins must be distinct .mjs/.js modules', () => {
    assertIssue(
      { channels: { plugins: ['./matrix.ts'] } },
      'channels.plugins[0]',
      'must be an ESM module (.mjs or .js)',
    );
    assertIssue({ channels: { plugins: ['./a.mjs', './a.mjs'] } }, 'channels.plugins', 'lists a module twice');
  });
});

describe('validateConfig', () => {
  it('validates an object that was never text (the embedded default goes through here)', () => {
    const c = validateConfig({ hooks: { enabled: true, token: TOKEN } }, undefined, NO_DIR, { env: {} });
    assert.equal(c.hooks.enabled, true);
  });

  it('runs extraChecks only on an otherwise valid config, and reports their problems', () => {
    let calls = 0;
    const extraChecks = () => {
      calls += 1;
      return [{ path: 'hooks.transformsDir', message: 'extra' }];
    };
    const err = configError(() => validateConfig({}, undefined, NO_DIR, { env: {}, extraChecks }));
    assert.deepEqual(err.issues, [{ path: 'hooks.transformsDir', message: 'extra' }]);
    assert.equal(calls, 1);
    configError(() => validateConfig({ admin: { enabled: true } }, undefined, NO_DIR, { env: {}, extraChecks }));
    assert.equal(calls, 1);
  });
});

describe('config files', () => {
  let dir: string;
  before(() => {
    dir = tempDir();
  });

  it('loadConfigFile reads the file; file is absolute, dir is its directory', () => {
    const sub = join(dir, 'etc');
    mkdirSync(sub, { recursive: true });
    const file = join(sub, 'hookgate.json5');
    writeFileSync(file, `{ hooks: { enabled: true, token: "${TOKEN}" } }`);
    const c = loadConfigFile(file, { env: {} });
    assert.equal(c.file, file);
    assert.equal(c.dir, sub);
    assert.equal(c.hooks.token, TOKEN);
    assert.equal(configPath(c, './data/x.db'), join(sub, 'data', 'x.db'));
    assert.equal(configPath(c, '/abs/x.db'), '/abs/x.db');
  });

  it('loadConfigFile: a missing file is a ConfigError naming it', () => {
    const file = join(dir, 'missing.json5');
    const err = configError(() => loadConfigFile(file, { env: {} }));
    assert.equal(err.issues.length, 1);
    assert.match(err.issues[0]!.message, /^cannot read .*missing\.json5: ENOENT$/);
    assert.match(err.message, /missing\.json5/);
  });

  it('loadConfigFile: problems in the file name the file', () => {
    const file = join(dir, 'bad.json5');
    writeFileSync(file, '{ hooks: { bogus: 1 } }');
    const err = configError(() => loadConfigFile(file, { env: {} }));
    assert.ok(err instanceof ConfigError);
    assert.equal(err.message, `invalid config ${file}:\n  hooks: unknown key: bogus`);
  });

  describe('findConfigFile: --config, else HOOKGATE_CONFIG, else ./hookgate.json5, else the embedded default', () => {
    it('nothing → undefined', () => {
      const empty = join(dir, 'empty');
      mkdirSync(empty, { recursive: true });
      assert.equal(findConfigFile(undefined, {}, empty), undefined);
    });

    it('./hookgate.json5 when it exists', () => {
      const cwd = join(dir, 'local');
      mkdirSync(cwd, { recursive: true });
      writeFileSync(join(cwd, 'hookgate.json5'), '{}');
      assert.equal(findConfigFile(undefined, {}, cwd), join(cwd, 'hookgate.json5'));
    });

    it('HOOKGATE_CONFIG wins over ./hookgate.json5, relative to the cwd, even when the file is missing', () => {
      const cwd = join(dir, 'local');
      assert.equal(findConfigFile(undefined, { HOOKGATE_CONFIG: 'conf/a.json5' }, cwd), join(cwd, 'conf', 'a.json5'));
      assert.equal(findConfigFile(undefined, { HOOKGATE_CONFIG: '/x/y.json5' }, cwd), '/x/y.json5');
    });

    it('--config wins over both', () => {
      const cwd = join(dir, 'local');
      assert.equal(findConfigFile('flag.json5', { HOOKGATE_CONFIG: 'env.json5' }, cwd), join(cwd, 'flag.json5'));
    });

    it('an empty HOOKGATE_CONFIG counts as unset', () => {
      const cwd = join(dir, 'local');
      assert.equal(findConfigFile(undefined, { HOOKGATE_CONFIG: '' }, cwd), join(cwd, 'hookgate.json5'));
    });
  });
});

describe('key paths and the error text', () => {
  it('keyPath formats zod segments', () => {
    assert.equal(keyPath(['hooks', 'mappings', 2, 'transform', 'module']), 'hooks.mappings[2].transform.module');
    assert.equal(keyPath(['gateway', 'trustedProxies', 0]), 'gateway.trustedProxies[0]');
    assert.equal(keyPath([]), '');
  });

  it('formatIssues lists every problem on its own line; the root is "(root)"', () => {
    assert.equal(
      formatIssues(
        [
          { path: '', message: 'a' },
          { path: 'hooks.path', message: 'b' },
        ],
        'f.json5',
      ),
      'invalid config f.json5:\n  (root): a\n  hooks.path: b',
    );
    assert.equal(formatIssues([{ path: 'x', message: 'y' }]), 'invalid config:\n  x: y');
  });
});

describe('transform paths are config problems (docs/reference.md#configuration)', () => {
  // serve and `config check` both load through loadServeConfig (src/config/serve-config.ts). Imported lazily so a broken app
  // module fails only these tests.
  let dir: string;
  before(() => {
    dir = tempDir();
    mkdirSync(join(dir, 'hooks', 'transforms'), { recursive: true });
    writeFileSync(join(dir, 'hooks', 'transforms', 'ok.mjs'), 'export default () => null;\n');
  });

  const load = async (config: Record<string, unknown>) => {
    const { loadServeConfig } = await import('../../src/config/serve-config.js');
    const file = join(dir, `c-${Math.random().toString(36).slice(2)}.json5`);
    writeFileSync(file, JSON.stringify(config));
    return () => loadServeConfig(file, dir, {});
  };

  it('a transform inside the transforms root is accepted', async () => {
    const run = await load({ hooks: { mappings: [{ transform: { module: 'ok.mjs' } }] } });
    assert.equal(run().config.hooks.mappings[0]!.transform?.module, 'ok.mjs');
  });

  it('transformsDir outside <config dir>/hooks/transforms is rejected at hooks.transformsDir', async () => {
    for (const transformsDir of ['/etc', '..', 'hooks']) {
      const run = await load({ hooks: { transformsDir } });
      const err = configError(run);
      assert.ok(
        err.issues.some((i) => i.path === 'hooks.transformsDir'),
        transformsDir,
      );
    }
  });

  it('a transform.module with "..", an absolute path, or a missing file is rejected at its key path', async () => {
    for (const module of ['../../outside.mjs', '/etc/evil.mjs', 'missing.mjs']) {
      const run = await load({ hooks: { mappings: [{ messageTemplate: 'm' }, { transform: { module } }] } });
      const err = configError(run);
      assert.ok(
        err.issues.some((i) => i.path === 'hooks.mappings[1].transform.module'),
        module,
      );
    }
  });
});

describe('loadStorageConfig and locateConfigFile (the CLI reading the store)', () => {
  it('resolves only the storage section: unset variables elsewhere are not looked at; its own are, by key path', () => {
    const dir = tempDir('hookgate-storage-');
    const file = join(dir, 'hg.json5');
    writeFileSync(
      file,
      '{ storage: { path: "${HG_STORE_DIR}/x.db" }, hooks: { token: "${NOT_SET_ANYWHERE}" }, channels: { bogus: 1 } }',
    );
    const s = loadStorageConfig(file, { HG_STORE_DIR: '/srv/hg' });
    assert.deepEqual(
      { file: s.file, dir: s.dir, storage: s.storage },
      { file, dir, storage: { driver: 'sqlite', path: '/srv/hg/x.db', synchronous: 'normal', checkpoints: 'auto' } },
    );
    const err = configError(() => loadStorageConfig(file, {}));
    assert.deepEqual(err.issues, [{ path: 'storage.path', message: 'environment variable HG_STORE_DIR is not set' }]);
    const embedded = loadStorageConfig(undefined, {}, dir);
    assert.deepEqual(
      { ...embedded },
      {
        file: undefined,
        dir,
        storage: { driver: 'sqlite', path: './data/hookgate.db', synchronous: 'normal', checkpoints: 'auto' },
      },
    );
  });

  it('locateConfigFile says where the config came from and, for the embedded default, what it looked for', () => {
    const dir = tempDir('hookgate-locate-');
    assert.deepEqual(locateConfigFile('a.json5', {}, dir), {
      file: join(dir, 'a.json5'),
      from: '--config',
      looked: [],
    });
    assert.equal(locateConfigFile(undefined, { HOOKGATE_CONFIG: 'b.json5' }, dir).from, '$HOOKGATE_CONFIG');
    const none = locateConfigFile(undefined, {}, dir);
    assert.equal(none.file, undefined);
    assert.deepEqual(none.looked, [
      '--config (not given)',
      '$HOOKGATE_CONFIG (not set)',
      `${join(dir, 'hookgate.json5')} (no such file)`,
    ]);
    writeFileSync(join(dir, 'hookgate.json5'), '{}');
    assert.equal(locateConfigFile(undefined, {}, dir).from, './hookgate.json5');
  });
});

describe('config: an unknown key names the closest known one', () => {
  it('a typo gets "did you mean", at the key path where it is, in nested objects and list entries too', () => {
    const text =
      '{ gateway: { prot: 1 }, hooks: { enabeld: true, token: "x", mappings: [{ matc: {}, action: "wake" }] }, admin: { tokne: "x", zzzzzz: 1 } }';
    const issues = issuesOf(text);
    const at = (path: string) => issues.find((i) => i.path === path)?.message;
    assert.equal(at('gateway'), 'unknown key: prot (did you mean "port"?)');
    assert.equal(at('hooks'), 'unknown key: enabeld (did you mean "enabled"?)');
    assert.equal(at('hooks.mappings[0]'), 'unknown key: matc (did you mean "match"?)');
    assert.equal(at('admin'), 'unknown keys: tokne (did you mean "token"?), zzzzzz', 'nothing near: no suggestion');
  });

  it('the storage section alone (the store-reading commands) says it too', () => {
    const dir = tempDir();
    const file = join(dir, 'hg.json5');
    writeFileSync(file, '{ storage: { pth: "x.db" } }');
    assert.throws(
      () => loadStorageConfig(file),
      (err: ConfigError) => err.issues.some((i) => i.path === 'storage' && /did you mean "path"/.test(i.message)),
    );
  });
});
