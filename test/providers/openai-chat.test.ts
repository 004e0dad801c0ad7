import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openaiChatProviderSchema } from '../../src/config/schema/models.js';
import { createOpenAIChatProvider } from '../../src/providers/openai-chat.js';
import { startOpenAIStandin, type OpenAIStandin } from '../support/openai-standin.js';
import { rejection, requestFor, withStandin } from '../support/provider-tests.js';

const KEY = 'sk-standin-0123456789abcdef';
const fast = { retry: { baseDelayMs: 1, maxDelayMs: 5 } };

function provider(ai: OpenAIStandin, extra: Record<string, unknown> = {}) {
  const config = openaiChatProviderSchema.parse({ api: 'openai-chat', baseUrl: ai.url, apiKey: KEY, ...extra });
  return createOpenAIChatProvider('local', config, fast);
}

const request = requestFor('llama3.2');

describe('openai-chat provider', () => {
  let ai: OpenAIStandin;
  withStandin(async () => (ai = await startOpenAIStandin({ apiKey: KEY })));

  it('posts model, system + messages, stream:false with the bearer key and extra headers, and returns the content', async () => {
    const p = provider(ai, { headers: { 'HTTP-Referer': 'https://hookgate.test' } });
    const reply = await p.complete(
      request({
        system: 'be brief',
        messages: [
          { role: 'user', content: 'first' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: 'second' },
        ],
      }),
    );
    assert.equal(reply.text, 'standin: second');
    assert.ok(reply.usage && reply.usage.inputTokens! > 0 && reply.usage.outputTokens! > 0);
    assert.deepEqual(ai.requests[0], {
      model: 'llama3.2',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'second' },
      ],
      stream: false,
    });
    const call = ai.calls[0]!;
    assert.equal(call.path, '/v1/chat/completions');
    assert.equal(call.headers['authorization'], `Bearer ${KEY}`);
    assert.equal(call.headers['http-referer'], 'https://hookgate.test');
    assert.match(call.headers['content-type'] ?? '', /^application\/json/);
  });

  it('maps thinking to reasoning_effort (off → omitted)', async () => {
    const p = provider(ai);
    await p.complete(request({ thinking: 'off' }));
    await p.complete(request({ thinking: 'high' }));
    await p.complete(request({ thinking: 'minimal' }));
    await p.complete(request());
    assert.equal('reasoning_effort' in ai.requests[0]!, false);
    assert.equal(ai.requests[1]!.reasoning_effort, 'high');
    assert.equal(ai.requests[2]!.reasoning_effort, 'minimal');
    assert.equal('reasoning_effort' in ai.requests[3]!, false);
  });

  it('accepts the array-of-parts content form', async () => {
    ai.setMode('parts');
    ai.setReply('joined from two parts');
    const reply = await provider(ai).complete(request());
    assert.equal(reply.text, 'joined from two parts');
    ai.setReply((b) => `standin: ${String(b.messages?.at(-1)?.content)}`);
  });

  it('works without an api key against a server that needs none (Ollama)', async () => {
    const ollama = await startOpenAIStandin({ apiKey: null });
    try {
      const config = openaiChatProviderSchema.parse({ api: 'openai-chat', baseUrl: `${ollama.url}/` });
      const reply = await createOpenAIChatProvider('ollama', config).complete(request());
      assert.equal(reply.text, 'standin: hello there');
      assert.equal(ollama.calls[0]!.headers['authorization'], undefined);
      assert.equal(ollama.calls[0]!.path, '/v1/chat/completions');
    } finally {
      await ollama.close();
    }
  });

  it('401 on a bad key: provider_http, not retried, and the key is not in the message', async () => {
    // One key shaped like an OpenAI key, one that only the configured-secret redaction can catch.
    for (const apiKey of ['sk-wrong-key-abcdef123456', 'ollama-local-wrong-key']) {
      const config = openaiChatProviderSchema.parse({ api: 'openai-chat', baseUrl: ai.url, apiKey });
      const err = await rejection(createOpenAIChatProvider('local', config, fast).complete(request()));
      assert.equal(err.code, 'provider_http');
      assert.equal(err.status, 401);
      assert.equal(err.retryable, false);
      assert.match(err.message, /HTTP 401: invalid_api_key: Incorrect API key provided: \[redacted\]/);
      assert.doesNotMatch(err.message, /wrong-key/);
    }
    assert.equal(ai.calls.length, 2, 'a 4xx is not retried');
  });

  it('404 for an unknown model is not retried', async () => {
    const picky = await startOpenAIStandin({ apiKey: KEY, models: ['gpt-4o'] });
    try {
      const err = await rejection(provider(picky, { maxAttempts: 3 }).complete(request({ model: 'nope' })));
      assert.equal(err.code, 'provider_http');
      assert.equal(err.status, 404);
      assert.equal(err.retryable, false);
      assert.match(err.message, /model_not_found/);
      assert.equal(picky.calls.length, 1);
    } finally {
      await picky.close();
    }
  });

  it('500 is retried up to maxAttempts, then provider_http retryable', async () => {
    ai.setMode('server-error');
    const err = await rejection(provider(ai, { maxAttempts: 3 }).complete(request()));
    assert.equal(err.code, 'provider_http');
    assert.equal(err.status, 500);
    assert.equal(err.retryable, true);
    assert.equal(ai.calls.length, 3);
  });

  it('recovers when a transient 500 goes away', async () => {
    ai.setMode('server-error', { times: 2 });
    const reply = await provider(ai, { maxAttempts: 3 }).complete(request());
    assert.equal(reply.text, 'standin: hello there');
    assert.deepEqual(
      ai.calls.map((c) => c.status),
      [500, 500, 200],
    );
  });

  it('429 honours Retry-After (seconds) before the next attempt', async () => {
    ai.setMode('rate-limit', { times: 1, retryAfter: '1' });
    const t0 = Date.now();
    const reply = await provider(ai, { maxAttempts: 2 }).complete(request());
    const waited = Date.now() - t0;
    assert.equal(reply.text, 'standin: hello there');
    assert.ok(waited >= 950, `waited only ${waited} ms`);
    assert.deepEqual(
      ai.calls.map((c) => c.status),
      [429, 200],
    );
  });

  it('429 as the last attempt carries retryAfterMs from an HTTP date', async () => {
    ai.setMode('rate-limit', { retryAfter: new Date(Date.now() + 30_000).toUTCString() });
    const err = await rejection(provider(ai, { maxAttempts: 1 }).complete(request()));
    assert.equal(err.status, 429);
    assert.equal(err.retryable, true);
    assert.ok(
      err.retryAfterMs !== undefined && err.retryAfterMs > 25_000 && err.retryAfterMs <= 30_000,
      String(err.retryAfterMs),
    );
  });

  it('a garbage 2xx body is provider_bad_response, not retried', async () => {
    ai.setMode('garbage');
    const err = await rejection(provider(ai, { maxAttempts: 3 }).complete(request()));
    assert.equal(err.code, 'provider_bad_response');
    assert.equal(err.retryable, false);
    assert.equal(ai.calls.length, 1);
  });

  it('empty choices is provider_bad_response', async () => {
    ai.setMode('empty-choices');
    const err = await rejection(provider(ai).complete(request()));
    assert.equal(err.code, 'provider_bad_response');
    assert.match(err.message, /empty choices/);
  });

  it('a hanging server: the run signal aborts with provider_timeout, not retried', async () => {
    ai.setMode('hang');
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 150);
    const t0 = Date.now();
    const err = await rejection(provider(ai, { maxAttempts: 3 }).complete(request({ signal: ctrl.signal })));
    assert.equal(err.code, 'provider_timeout');
    assert.equal(err.retryable, false);
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(ai.calls.length, 1);
  });

  it('requestTimeoutMs bounds each attempt; a timed-out attempt is retried', async () => {
    ai.setMode('hang', { times: 1 });
    const reply = await provider(ai, { maxAttempts: 2, requestTimeoutMs: 150 }).complete(request());
    assert.equal(reply.text, 'standin: hello there');
    assert.deepEqual(
      ai.calls.map((c) => c.status),
      [0, 200],
    );
  });

  it('requestTimeoutMs on every attempt ends as a retryable provider_timeout', async () => {
    ai.setMode('hang');
    const err = await rejection(provider(ai, { maxAttempts: 2, requestTimeoutMs: 100 }).complete(request()));
    assert.equal(err.code, 'provider_timeout');
    assert.equal(err.retryable, true);
    assert.match(err.message, /requestTimeoutMs/);
  });

  it('a closed port is provider_unreachable (retryable)', async () => {
    const gone = await startOpenAIStandin();
    const url = gone.url;
    await gone.close();
    const config = openaiChatProviderSchema.parse({ api: 'openai-chat', baseUrl: url, maxAttempts: 2 });
    const err = await rejection(createOpenAIChatProvider('local', config, fast).complete(request()));
    assert.equal(err.code, 'provider_unreachable');
    assert.equal(err.retryable, true);
    assert.match(err.message, /ECONNREFUSED/);
  });

  it('an already-aborted signal sends nothing', async () => {
    const ctrl = new AbortController();
    ctrl.abort();
    const err = await rejection(provider(ai).complete(request({ signal: ctrl.signal })));
    assert.equal(err.code, 'provider_timeout');
    assert.equal(ai.calls.length, 0);
  });
});
