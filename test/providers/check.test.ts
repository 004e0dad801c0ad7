/**
 * Each provider's `check` (hookgate doctor): the model list of the HTTP APIs (stand-ins answering GET /v1/models as
 * the real APIs do), a command found on PATH, echo. A refused key names apiKey and never shows it.
 */
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { providerSchema } from '../../src/config/schema/models.js';
import { createProvider } from '../../src/providers/registry.js';
import { startAnthropicStandin } from '../support/anthropic-standin.js';
import { startOpenAIStandin } from '../support/openai-standin.js';
import { closedPortUrl } from '../support/platforms/fixtures.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

const KEY = 'sk-standin-0123456789abcdef';
const check = (config: Record<string, unknown>) =>
  createProvider('p', providerSchema.parse(config)).check!(AbortSignal.timeout(5000));

describe('provider checks (hookgate doctor)', () => {
  it('openai-chat: GET {baseUrl}/models with the key; a wrong key is refused without being shown; a closed port is unreachable', async () => {
    const ai = await startOpenAIStandin({ apiKey: KEY });
    try {
      const ok = await check({ api: 'openai-chat', baseUrl: ai.url, apiKey: KEY });
      assert.equal(ok.status, 'ok');
      assert.match(ok.detail, /answers; 2 models listed/);
      assert.deepEqual(
        ai.calls.map((c) => [c.method, c.path, c.headers.authorization]),
        [['GET', '/v1/models', `Bearer ${KEY}`]],
      );
      const wrong = 'sk-wrong-0123456789abcdef';
      const bad = await check({ api: 'openai-chat', baseUrl: ai.url, apiKey: wrong });
      assert.equal(bad.status, 'fail');
      assert.match(bad.detail, /^the API key is refused \(HTTP 401/);
      assert.match(bad.fix ?? '', /apiKey/);
      assert.ok(!JSON.stringify(bad).includes(wrong), JSON.stringify(bad));
      assert.equal(ai.requests.length, 0, 'no completion was asked for');
    } finally {
      await ai.close();
    }
    const closed = await closedPortUrl();
    const down = await check({ api: 'openai-chat', baseUrl: closed, apiKey: KEY });
    assert.equal(down.status, 'fail');
    assert.equal(down.detail, `cannot reach ${closed} (ECONNREFUSED)`);
  });

  it('anthropic-messages: GET {baseUrl}/v1/models with x-api-key and anthropic-version', async () => {
    const api = await startAnthropicStandin({ apiKey: KEY });
    try {
      const ok = await check({ api: 'anthropic-messages', baseUrl: api.url, apiKey: KEY });
      assert.equal(ok.status, 'ok');
      const call = api.calls.at(-1);
      assert.equal(call?.path, '/v1/models');
      assert.equal(call?.headers['x-api-key'], KEY);
      assert.equal(call?.headers['anthropic-version'], '2023-06-01');
      const bad = await check({ api: 'anthropic-messages', baseUrl: api.url, apiKey: 'sk-ant-wrong-key' });
      assert.equal(bad.status, 'fail');
      assert.match(bad.detail, /the API key is refused \(HTTP 401: authentication_error: invalid x-api-key\)/);
      assert.ok(!JSON.stringify(bad).includes('sk-ant-wrong-key'));
    } finally {
      await api.close();
    }
  });

  it('command: found on PATH, or as a path; missing or not executable fails; nothing is run', async () => {
    const dir = tempDir('hookgate-cmdcheck-');
    try {
      const script = join(dir, 'agent.sh');
      writeFileSync(script, '#!/bin/sh\ntouch ran\n');
      chmodSync(script, 0o755);
      assert.equal((await check({ api: 'command', command: 'sh' })).status, 'ok');
      const byPath = await check({ api: 'command', command: './agent.sh', cwd: dir });
      assert.equal(byPath.status, 'ok');
      assert.match(byPath.detail, /agent\.sh/);
      assert.equal((await check({ api: 'command', command: 'agent.sh', env: { PATH: dir } })).status, 'ok');
      const missing = await check({ api: 'command', command: 'no-such-agent-xyz' });
      assert.equal(missing.status, 'fail');
      assert.match(missing.detail, /"no-such-agent-xyz" is not on PATH/);
      chmodSync(script, 0o644);
      assert.equal((await check({ api: 'command', command: script })).status, 'fail');
    } finally {
      removeDir(dir);
    }
  });

  it('echo: always ok', async () => {
    assert.equal((await check({ api: 'echo' })).status, 'ok');
  });
});
