/** `hooks.gmail` (docs/gmail.md, "Configuration"): defaults, the checks when `account` is set, secret forms. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TOKEN } from '../support/token.js';
import { assertIssue, parse } from './helpers.js';
import { OPENCLAW_GMAIL_BLOCK } from '../support/openclaw.js';

const full = {
  account: 'ada@example.com',
  topic: 'projects/p/topics/t',
  audience: 'https://h.example/hooks/gmail-push',
  serviceAccountEmail: 'push@p.iam.gserviceaccount.com',
  oauth: { clientId: 'c', clientSecret: { env: 'GMAIL_SECRET' }, refreshToken: '${GMAIL_RT}' },
};
const cfg = (gmail: Record<string, unknown>) => ({ hooks: { enabled: true, token: TOKEN, gmail } });
const env = { GMAIL_SECRET: 'sec', GMAIL_RT: 'rt' };

describe('hooks.gmail', () => {
  it('a full section parses with its defaults; oauth takes the secret forms', () => {
    const g = parse(cfg(full), env).hooks.gmail;
    assert.equal(g.pushPath, 'gmail-push');
    assert.deepEqual(g.labels, ['INBOX']);
    assert.equal(g.renewEveryHours, 24);
    assert.equal(g.maxBodyChars, 20000);
    assert.deepEqual(g.oauth, { clientId: 'c', clientSecret: 'sec', refreshToken: 'rt' });
  });

  it('with account set, audience, serviceAccountEmail, topic and oauth are required', () => {
    for (const key of ['audience', 'serviceAccountEmail', 'topic', 'oauth']) {
      const rest: Record<string, unknown> = { ...full };
      delete rest[key];
      assertIssue(cfg(rest), `hooks.gmail.${key}`, /requires/, env);
    }
  });

  it('a bare topic needs project; pushPath may not be the preset path; the watch must renew within 7 days; URLs are http(s)', () => {
    assertIssue(cfg({ ...full, topic: 'gmail' }), 'hooks.gmail.topic', /project/, env);
    assert.equal(parse(cfg({ ...full, topic: 'gmail', project: 'p' }), env).hooks.gmail.topic, 'gmail');
    assertIssue(cfg({ ...full, pushPath: '/gmail/' }), 'hooks.gmail.pushPath', /preset/, env);
    assertIssue(cfg({ ...full, pushPath: 'agent' }), 'hooks.gmail.pushPath', undefined, env);
    assertIssue(cfg({ ...full, renewEveryHours: 168 }), 'hooks.gmail.renewEveryHours', /7 days/, env);
    assertIssue(cfg({ ...full, jwksUrl: 'ftp://x' }), 'hooks.gmail.jwksUrl', /http/, env);
  });

  it("OpenClaw's watcher keys are accepted with a warning", () => {
    const c = parse(cfg({ pushToken: 'x', label: 'INBOX' }), env);
    assert.ok(c.warnings.some((w) => /pushToken/.test(w) && /unused/.test(w)));
  });

  it("OpenClaw's whole block (as `openclaw webhooks gmail setup` writes it) validates: the watcher's mailbox, chain off, one message per key", () => {
    const openclaw = { ...OPENCLAW_GMAIL_BLOCK, model: 'echo/echo' };
    const c = parse({ hooks: { enabled: true, token: TOKEN, presets: ['gmail'], gmail: openclaw } });
    const g = c.hooks.gmail;
    assert.equal(g.account, undefined, "hookgate's own chain stays off");
    assert.equal(g.watcherAccount, 'openclaw@gmail.com');
    assert.equal(g.model, 'echo/echo');
    for (const key of ['label', 'pushToken', 'hookUrl', 'renewEveryMinutes', 'serve', 'tailscale']) {
      assert.ok(
        c.warnings.some((w) =>
          w.startsWith(`hooks.gmail.${key}: a key of OpenClaw's Gmail watcher, unused by hookgate: `),
        ),
        key,
      );
    }
    assert.ok(c.warnings.some((w) => /must keep posting to \/hooks\/gmail/.test(w) && /hookgate gmail setup/.test(w)));
    assert.ok(!c.warnings.some((w) => /add "gmail" to hooks.presets/.test(w)));
    // Without the preset, nothing would serve the watcher's posts: said.
    const bare = parse({ hooks: { enabled: true, token: TOKEN, gmail: openclaw } });
    assert.ok(bare.warnings.some((w) => /add "gmail" to hooks.presets/.test(w)));
    // A block with any key of hookgate's own chain is hookgate's: its requirements apply.
    assertIssue(
      cfg({ ...openclaw, audience: 'https://h.example/hooks/gmail-push' }),
      'hooks.gmail.oauth',
      /requires/,
      env,
    );
    // watcherAccount is never set by hand.
    assertIssue(cfg({ watcherAccount: 'x@example.com' }), 'hooks.gmail.watcherAccount', undefined, env);
  });
});
