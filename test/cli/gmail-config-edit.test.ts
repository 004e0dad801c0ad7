/** `hooks.gmail` goes into the user's JSON5 as text: comments and layout survive, the result parses. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import JSON5 from 'json5';
import { type GmailBlock, blockValue, gmailBlockText, insertGmail } from '../../src/cli/gmail-config-edit.js';
import { starterConfig } from '../../src/cli/starter-config.js';

const block: GmailBlock = {
  account: 'ada@example.com',
  project: 'my-proj-1',
  topic: 'hookgate-gmail',
  subscription: 'hookgate-gmail-push',
  pushPath: 'gmail-push',
  audience: 'https://hooks.example.com/hooks/gmail-push',
  serviceAccountEmail: 'push@my-proj-1.iam.gserviceaccount.com',
  labels: ['INBOX', 'Label_7'],
  includeBody: true,
  maxBodyChars: 20000,
  oauth: {
    clientId: 'cid.apps.googleusercontent.com',
    clientSecret: { env: 'GMAIL_CLIENT_SECRET' },
    refreshToken: { env: 'GMAIL_REFRESH_TOKEN' },
  },
  renewEveryHours: 24,
};
const value = blockValue(block);
const lines = (indent: string) =>
  gmailBlockText(block, indent, 'https://hooks.example.com/hooks/gmail-push', '2026-11-25');

function edited(text: string): string {
  const r = insertGmail(text, value, lines);
  assert.equal(r.kind, 'edited', JSON.stringify(r));
  return (r as { text: string }).text;
}

const gmailOf = (text: string) => (JSON5.parse(text) as { hooks: { gmail: unknown } }).hooks.gmail;

describe('gmail setup: writing hooks.gmail into the config text', () => {
  it("appends the block to the starter config's hooks, keeping every comment and every other line", () => {
    const before = starterConfig('t'.repeat(43));
    const after = edited(before);
    assert.deepEqual(gmailOf(after), value);
    const kept = before.split('\n').filter((l) => !after.includes(l));
    assert.deepEqual(kept, [], 'no line of the original is lost');
    assert.match(after, /mappings: \[\],\n    \/\/ Gmail push \(written by `hookgate gmail setup`/);
    assert.match(after, /\n    gmail: \{\n      account: "ada@example.com",/, 'indented as a member of hooks');
    assert.match(after, /clientSecret: \{ env: "GMAIL_CLIENT_SECRET" \}/, 'secrets as env references');
    const parsed = JSON5.parse(after) as Record<string, unknown>;
    assert.deepEqual(Object.keys(parsed), Object.keys(JSON5.parse(before) as object), 'top-level keys unchanged');
  });

  it('adds the comma a last member without one needs, and keeps its trailing comment on its line', () => {
    const before =
      '{\n  // mine\n  hooks: {\n    enabled: true,\n    token: "x", /* inline */\n    presets: ["gmail"]  // last, no comma\n  },\n}\n';
    const after = edited(before);
    assert.deepEqual(gmailOf(after), value);
    assert.match(after, /presets: \["gmail"\],  \/\/ last, no comma\n/);
    assert.match(after, /token: "x", \/\* inline \*\//);
    assert.equal((JSON5.parse(after) as { hooks: { enabled: boolean } }).hooks.enabled, true);
  });

  it('handles a one-line hooks object, quoted keys, and braces inside strings and comments', () => {
    const before = '{"storage": {"path": "./a{b}.db"}, /* { */ "hooks": {"enabled": true, "token": "}{"}}';
    const after = edited(before);
    assert.deepEqual(gmailOf(after), value);
    const parsed = JSON5.parse(after) as { storage: { path: string }; hooks: { token: string } };
    assert.equal(parsed.storage.path, './a{b}.db');
    assert.equal(parsed.hooks.token, '}{');
  });

  it('adds a hooks section to a config that has none', () => {
    const r = insertGmail('{\n  logging: { level: "info" }\n}\n', value, lines);
    assert.equal(r.kind, 'edited');
    assert.equal((r as { how: string }).how, 'added a hooks section');
    assert.deepEqual(gmailOf((r as { text: string }).text), value);
  });

  it('replaces an empty gmail: {} in place', () => {
    const before = '{\n  hooks: {\n    enabled: true,\n    gmail: {},\n    mappings: [],\n  },\n}\n';
    const r = insertGmail(before, value, lines);
    assert.equal(r.kind, 'edited');
    assert.equal((r as { how: string }).how, 'replaced the empty gmail: {}');
    const after = (r as { text: string }).text;
    assert.deepEqual(gmailOf(after), value);
    assert.match(after, /renewEveryHours: 24, .*\n    },\n    mappings: \[\],/);
    assert.equal(after.match(/gmail:/g)!.length, 1);
  });

  it('leaves a config that already holds the same block alone, and refuses to rewrite a different one', () => {
    const once = edited(starterConfig('t'.repeat(43)));
    assert.deepEqual(insertGmail(once, value, lines), { kind: 'same' });
    const other = insertGmail(once, { ...value, account: 'bob@example.com' }, lines);
    assert.equal(other.kind, 'refused');
    assert.match((other as { reason: string }).reason, /already has a hooks\.gmail section/);
  });

  it('refuses text that is not a JSON5 object', () => {
    assert.equal(insertGmail('{ hooks: ', value, lines).kind, 'refused');
    assert.equal(insertGmail('[1]', value, lines).kind, 'refused');
    assert.equal(insertGmail('{ hooks: [] }', value, lines).kind, 'refused');
  });
});
