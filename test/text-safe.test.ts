import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { credentialLike, maskUrlsIn, safeUrl } from '../src/text-safe.js';

describe('safeUrl: a configured URL made safe to show', () => {
  it('masks what incoming-webhook URLs carry their secret in, and keeps scheme, host, port and plain names', () => {
    const cases: Array<[string, string]> = [
      // The probe's target: a token-like path after /services/ and two query values.
      [
        'http://127.0.0.1:21099/services/T0/B0/PATHSECRET456?key=URLSECRET123&sig=QSIG789',
        'http://127.0.0.1:21099/services/***/***/***?key=***&sig=***',
      ],
      [
        'https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX',
        'https://hooks.slack.com/services/***/***/***',
      ],
      [
        'https://discord.com/api/webhooks/123456789012345678/abcDEF_ghi-JKLmno',
        'https://discord.com/api/webhooks/***/***',
      ],
      ['https://hooks.zapier.com/hooks/catch/123456/abcdef7/', 'https://hooks.zapier.com/hooks/catch/***/***/'],
      [
        'https://contoso.webhook.office.com/webhookb2/0f1e2d3c-aaaa@72f9/IncomingWebhook/abc/3c2d',
        'https://contoso.webhook.office.com/webhookb2/***/***/***/***',
      ],
      [
        'https://fn.azurewebsites.net/api/HttpTrigger?code=abc==&clientId=default',
        'https://fn.azurewebsites.net/api/HttpTrigger?code=***&clientId=***',
      ],
      [
        'https://prod-00.westus.logic.azure.com:443/workflows/0123456789abcdef0123456789abcdef/triggers/manual/paths/invoke?api-version=2016-06-01&sig=s1g',
        'https://prod-00.westus.logic.azure.com/workflows/***/triggers/manual/paths/invoke?api-version=***&sig=***',
      ],
      [
        'postgres://hookgate:pw@db.internal:5432/hookgate?password=pw2&sslmode=require',
        'postgres://hookgate:***@db.internal:5432/hookgate?password=***&sslmode=***',
      ],
      ['postgres:///hookgate?host=/run/postgresql', 'postgres:///hookgate?host=***'],
      ['http://user:BASICPW999@api.example.com:8080/v1/chat', 'http://user:***@api.example.com:8080/v1/chat'],
      ['https://ghp0123456789abcdefghij@github.com/x', 'https://***@github.com/x'],
      [
        'https://api.telegram.org/bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe',
        'https://api.telegram.org/***/getMe',
      ],
      ['https://example.com/hook#access_token=abc', 'https://example.com/hook#***'],
      ['https://example.com/hook?flag', 'https://example.com/hook?flag'],
      ['https://api.example.com/v1/IncomingWebhook', 'https://api.example.com/v1/IncomingWebhook'],
    ];
    for (const [url, shown] of cases) assert.equal(safeUrl(url), shown, url);
  });

  it('shows no part of a string that does not parse as a URL', () => {
    assert.equal(safeUrl('http://[bad/PATHSECRET456'), '(a URL that does not parse)');
    assert.equal(safeUrl('hunter2'), '(a URL that does not parse)');
  });

  it('is idempotent: a shown URL shows the same (the audit masks a record twice)', () => {
    const once = safeUrl('https://u:p@h.example/services/a/b?k=v#f');
    assert.equal(safeUrl(once), once);
  });

  const TOKEN_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~';
  const token = (min: number, max: number) =>
    fc.string({ unit: fc.constantFrom(...TOKEN_CHARS), minLength: min, maxLength: max });
  const word = fc.constantFrom('api', 'v1', 'hooks', 'incoming', 'notify', 'x', 'IncomingWebhook', 'chat', 'events');
  const host = fc.constantFrom('example.com', '127.0.0.1:8080', 'hooks.example.net', '[::1]:9000');

  it('a random token of 20+ characters in any path segment, query value or the password never survives', () => {
    fc.assert(
      fc.property(
        host,
        fc.array(word, { maxLength: 5 }),
        fc.array(word, { minLength: 1, maxLength: 4 }),
        token(20, 60),
        fc.nat(),
        fc.constantFrom('path', 'query', 'password'),
        (h, path, names, secret, at, where) => {
          const segments: string[] = [...path];
          if (where === 'path') segments.splice(at % (segments.length + 1), 0, secret);
          const values = names.map((n, i) => `${n}=${where === 'query' && i === at % names.length ? secret : 'v'}`);
          const user = where === 'password' ? `user:${secret}@` : '';
          const url = `https://${user}${h}/${segments.join('/')}?${values.join('&')}`;
          const shown = safeUrl(url);
          assert.ok(!shown.includes(secret), `${url} → ${shown}`);
          assert.ok(shown.startsWith(`https://${where === 'password' ? 'user:***@' : ''}${new URL(url).host}/`), shown);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('every query value is masked and every name kept; 12+ characters mixing letters and digits are masked too', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(word, token(1, 30)), { minLength: 1, maxLength: 6 }), (pairs) => {
        const shown = new URL(safeUrl(`https://h.example/x?${pairs.map(([n, v]) => `${n}=${v}`).join('&')}`));
        assert.deepEqual(
          [...shown.searchParams],
          pairs.map(([n]) => [n, '***']),
        );
      }),
    );
    fc.assert(
      fc.property(
        token(12, 19).filter((t) => /[0-9]/.test(t) && /[A-Za-z]/.test(t)),
        (t) => {
          assert.equal(credentialLike(t), true);
          assert.ok(!safeUrl(`https://h.example/a/${t}/b`).includes(t));
        },
      ),
    );
  });

  it('maskUrlsIn masks each URL inside a text and leaves the rest', () => {
    assert.equal(
      maskUrlsIn('POST to https://h.example/services/a/b?key=K and http://u:p@x.example/ok, then stop'),
      'POST to https://h.example/services/***/***?key=*** and http://u:***@x.example/ok, then stop',
    );
    assert.equal(maskUrlsIn('no url here: just text'), 'no url here: just text');
  });
});
