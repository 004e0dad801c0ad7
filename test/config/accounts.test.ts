/** Named channel accounts: `channels.<platform>.accounts.<id>`, each the top-level section with its own fields laid over. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { configuredAccounts } from '../../src/config/lookup.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';
import { assertIssue, issuesOf, parse } from './helpers.js';

const DEFAULT_BOT = '111111:default-secret';
const ALERTS_BOT = '222222:alerts-secret';

describe('channel accounts: merge and schema', () => {
  it('an account is the top-level section with its fields laid over, defaults applied to the merged result', () => {
    const c = parse({
      channels: {
        telegram: {
          botToken: DEFAULT_BOT,
          apiBaseUrl: 'http://127.0.0.1:9000',
          accounts: { alerts: { botToken: ALERTS_BOT }, slow: { timeoutMs: 60_000 } },
        },
      },
    });
    const tg = c.channels.telegram!;
    assert.equal(tg.botToken, DEFAULT_BOT);
    assert.deepEqual(tg.accounts.alerts, {
      botToken: ALERTS_BOT,
      apiBaseUrl: 'http://127.0.0.1:9000',
      timeoutMs: 15_000,
    });
    assert.deepEqual(tg.accounts.slow, {
      botToken: DEFAULT_BOT,
      apiBaseUrl: 'http://127.0.0.1:9000',
      timeoutMs: 60_000,
    });
    assert.deepEqual(Object.fromEntries(configuredAccounts(c)), { telegram: ['default', 'alerts', 'slow'] });
  });

  it('no accounts key: an empty map, and the platform has only its default account', () => {
    const c = parse({ channels: { slack: { botToken: 'xoxb-1' } } });
    assert.deepEqual(c.channels.slack!.accounts, {});
    assert.deepEqual(Object.fromEntries(configuredAccounts(c)), { slack: ['default'] });
  });

  it('every core platform takes accounts, IRC included', () => {
    const c = parse({
      channels: {
        irc: { host: 'irc.example.org', nick: 'hookgate', accounts: { ops: { nick: 'hookgate-ops' } } },
        whatsapp: { accessToken: 'a', phoneNumberId: '1', accounts: { eu: { phoneNumberId: '2' } } },
        msteams: {
          appId: 'app',
          appPassword: 'p',
          accounts: { other: { appId: 'app2', apiBaseUrl: 'http://127.0.0.1:1' } },
        },
      },
    });
    assert.equal(c.channels.irc!.accounts.ops!.nick, 'hookgate-ops');
    assert.equal(c.channels.irc!.accounts.ops!.host, 'irc.example.org');
    assert.equal(c.channels.whatsapp!.accounts.eu!.phoneNumberId, '2');
    assert.equal(c.channels.msteams!.accounts.other!.serviceUrl, 'http://127.0.0.1:1');
  });

  it('the merged account must pass the strict platform schema: problems by key path under accounts.<id>', () => {
    assertIssue(
      { channels: { telegram: { botToken: DEFAULT_BOT, accounts: { alerts: { botToken: 'not-a-token' } } } } },
      'channels.telegram.accounts.alerts.botToken',
      /Bot API token/,
    );
    assertIssue(
      { channels: { telegram: { botToken: DEFAULT_BOT, accounts: { alerts: { botTokn: ALERTS_BOT } } } } },
      'channels.telegram.accounts.alerts',
      'unknown key: botTokn',
    );
    assertIssue(
      { channels: { slack: { botToken: 'xoxb-1', accounts: { b: { timeoutMs: -1 } } } } },
      'channels.slack.accounts.b.timeoutMs',
    );
  });

  it('a top-level problem is named once, not again under every account that inherits it', () => {
    const issues = issuesOf({ channels: { telegram: { botToken: 'bad', accounts: { alerts: { timeoutMs: 5 } } } } });
    assert.deepEqual(
      issues.map((i) => i.path),
      ['channels.telegram.botToken'],
    );
  });

  it('null drops an inherited field, for fields that exclude each other (Google Chat credentials)', () => {
    const googlechat = {
      accessToken: 'ya29.default',
      accounts: { other: { accessToken: null, serviceAccountFile: './other.json' } },
    };
    const c = parse({ channels: { googlechat } });
    assert.equal(c.channels.googlechat!.accounts.other!.accessToken, undefined);
    assert.equal(c.channels.googlechat!.accounts.other!.serviceAccountFile, './other.json');
    assertIssue(
      {
        channels: {
          googlechat: { accessToken: 'ya29.default', accounts: { other: { serviceAccountFile: './other.json' } } },
        },
      },
      'channels.googlechat.accounts.other',
      /set exactly one of/,
    );
  });

  it('account ids are lower-case letters, digits, - and _; "default" is the top level itself', () => {
    for (const id of ['Alerts', 'al erts', 'al.erts', '']) {
      assertIssue(
        { channels: { telegram: { botToken: DEFAULT_BOT, accounts: { [id]: { botToken: ALERTS_BOT } } } } },
        `channels.telegram.accounts.${id}`,
        /account ids are lower-case/,
      );
    }
    parse({ channels: { telegram: { botToken: DEFAULT_BOT, accounts: { 'ops-2_b': { botToken: ALERTS_BOT } } } } });
    assertIssue(
      { channels: { telegram: { botToken: DEFAULT_BOT, accounts: { default: { botToken: ALERTS_BOT } } } } },
      'channels.telegram.accounts.default',
      /top-level section is the default account/,
    );
  });

  it('accounts must be an object of objects', () => {
    assertIssue(
      { channels: { telegram: { botToken: DEFAULT_BOT, accounts: [] } } },
      'channels.telegram.accounts',
      /must be an object/,
    );
    assertIssue(
      { channels: { telegram: { botToken: DEFAULT_BOT, accounts: { alerts: 'x' } } } },
      'channels.telegram.accounts.alerts',
      /must be an object/,
    );
  });

  it('extension channels have no accounts', () => {
    assertIssue({ channels: { log: { accounts: { a: {} } } } }, 'channels.log', /unknown key: accounts/);
    assertIssue(
      { channels: { webhook: { targets: {}, accounts: { a: {} } } } },
      'channels.webhook',
      /unknown key: accounts/,
    );
  });

  it('secret forms work inside accounts: ${ENV}, { env }, { file }, and a missing one is named by its path', () => {
    const dir = tempDir('hookgate-accounts-');
    writeFileSync(join(dir, 'ops.token'), '333333:ops-secret\n');
    const env = { ALERTS_BOT, OPS_ID: '333333' };
    const c = parse(
      {
        channels: {
          telegram: {
            botToken: DEFAULT_BOT,
            accounts: {
              alerts: { botToken: { env: 'ALERTS_BOT' } },
              ops: { botToken: { file: 'ops.token' } },
              third: { botToken: '${OPS_ID}:third-secret' },
            },
          },
        },
      },
      env,
      dir,
    );
    assert.equal(c.channels.telegram!.accounts.alerts!.botToken, ALERTS_BOT);
    assert.equal(c.channels.telegram!.accounts.ops!.botToken, '333333:ops-secret');
    assert.equal(c.channels.telegram!.accounts.third!.botToken, '333333:third-secret');
    assertIssue(
      { channels: { telegram: { botToken: DEFAULT_BOT, accounts: { alerts: { botToken: { env: 'NOPE' } } } } } },
      'channels.telegram.accounts.alerts.botToken',
      'environment variable NOPE is not set',
    );
  });

  it('an invalid token is reported without echoing it', () => {
    const issues = issuesOf({
      channels: { telegram: { botToken: DEFAULT_BOT, accounts: { alerts: { botToken: 'sup3r-s3cret value' } } } },
    });
    assert.ok(!JSON.stringify(issues).includes('sup3r-s3cret'), JSON.stringify(issues));
  });
});

describe('channel accounts: mappings', () => {
  const channels = { telegram: { botToken: DEFAULT_BOT, accounts: { alerts: { botToken: ALERTS_BOT } } } };
  const withMapping = (m: Record<string, unknown>) => ({
    hooks: { enabled: true, token: TOKEN, mappings: [{ match: { path: 'x' }, messageTemplate: 'm', ...m }] },
    channels,
  });

  it('a static accountId must be an account of the mapping’s explicit channel', () => {
    parse(withMapping({ channel: 'telegram', accountId: 'alerts' }));
    parse(withMapping({ channel: 'telegram', accountId: 'default' }));
    assertIssue(
      withMapping({ channel: 'telegram', accountId: 'nope' }),
      'hooks.mappings[0].accountId',
      'accountId "nope" is not an account of channel "telegram"; use one of: default, alerts',
    );
    assertIssue(withMapping({ accountId: 'alerts' }), 'hooks.mappings[0].accountId', /needs an explicit channel/);
    assertIssue(withMapping({ channel: 'log', accountId: 'alerts' }), 'hooks.mappings[0].accountId', /has no accounts/);
  });

  it('templated values are checked per request', () => {
    parse(withMapping({ channel: 'telegram', accountId: '{{payload.bot}}' }));
    parse(withMapping({ channel: '{{payload.channel}}', accountId: 'alerts' }));
  });
});
