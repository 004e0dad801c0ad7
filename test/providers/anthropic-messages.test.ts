import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { anthropicProviderSchema } from '../../src/config/schema/models.js';
import {
  createAnthropicProvider,
  parseAnthropicReply,
  THINKING_BUDGETS,
  thinkingBudget,
} from '../../src/providers/anthropic-messages.js';
import { startAnthropicStandin, type AnthropicStandin } from '../support/anthropic-standin.js';
import { rejection, requestFor, withStandin } from '../support/provider-tests.js';

const KEY = 'sk-ant-api03-standin-0123456789';
const fast = { retry: { baseDelayMs: 1, maxDelayMs: 5 } };

function provider(api: AnthropicStandin, extra: Record<string, unknown> = {}) {
  const config = anthropicProviderSchema.parse({ api: 'anthropic-messages', baseUrl: api.url, apiKey: KEY, ...extra });
  return createAnthropicProvider('claude', config, fast);
}

const request = requestFor('claude-sonnet-4-5');

describe('anthropic-messages provider', () => {
  let api: AnthropicStandin;
  withStandin(async () => (api = await startAnthropicStandin({ apiKey: KEY })));

  it('posts model, max_tokens, top-level system and messages with x-api-key and anthropic-version', async () => {
    const reply = await provider(api).complete(
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
    assert.deepEqual(api.requests[0], {
      model: 'claude-sonnet-4-5',
      max_tokens: 4096,
      system: 'be brief',
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'second' },
      ],
    });
    const call = api.calls[0]!;
    assert.equal(call.path, '/v1/messages');
    assert.equal(call.headers['x-api-key'], KEY);
    assert.equal(call.headers['anthropic-version'], '2023-06-01');
    assert.equal(call.headers['authorization'], undefined);
  });

  it('omits system when there is none and uses the configured maxTokens and extra headers', async () => {
    await provider(api, { maxTokens: 1000, headers: { 'anthropic-beta': 'test-beta' } }).complete(request());
    assert.equal('system' in api.requests[0]!, false);
    assert.equal(api.requests[0]!.max_tokens, 1000);
    assert.equal(api.calls[0]!.headers['anthropic-beta'], 'test-beta');
  });

  it('maps thinking to an enabled budget with max_tokens above it, and skips thinking blocks in the reply', async () => {
    const p = provider(api);
    for (const level of ['minimal', 'low', 'medium', 'high'] as const) {
      const reply = await p.complete(request({ thinking: level }));
      assert.equal(reply.text, 'standin: hello there', 'only the text block, not the thinking block');
    }
    for (const [i, level] of ['minimal', 'low', 'medium', 'high'].entries()) {
      const body = api.requests[i]!;
      assert.deepEqual(body.thinking, { type: 'enabled', budget_tokens: THINKING_BUDGETS[level] });
      assert.equal(body.max_tokens, THINKING_BUDGETS[level]! + 4096);
    }
    assert.ok(
      api.calls.every((c) => c.status === 200),
      'the stand-in accepted every budget',
    );
  });

  it('thinking off / unset / unknown sends no thinking field; a number is a budget (at least 1024)', async () => {
    const p = provider(api);
    await p.complete(request({ thinking: 'off' }));
    await p.complete(request());
    assert.equal('thinking' in api.requests[0]!, false);
    assert.equal('thinking' in api.requests[1]!, false);
    assert.equal(thinkingBudget('turbo'), undefined);
    assert.equal(thinkingBudget('8000'), 8000);
    assert.equal(thinkingBudget('10'), 1024);
  });

  it('concatenates the text blocks and skips thinking, redacted_thinking and tool blocks', () => {
    const reply = parseAnthropicReply(
      {
        type: 'message',
        content: [
          { type: 'thinking', thinking: 'secret plan', signature: 'x' },
          { type: 'text', text: 'Hello, ' },
          { type: 'redacted_thinking', data: 'abc' },
          { type: 'tool_use', id: 't', name: 'n', input: {} },
          { type: 'text', text: 'world' },
        ],
        usage: { input_tokens: 3, output_tokens: 4 },
      },
      'x',
    );
    assert.deepEqual(reply, { text: 'Hello, world', usage: { inputTokens: 3, outputTokens: 4 } });
    assert.throws(() => parseAnthropicReply({ content: [{ type: 'text' }] }, 'x'), { code: 'provider_bad_response' });
  });

  it('401 on a bad key: the Anthropic error type and message, not retried, key not echoed', async () => {
    const config = anthropicProviderSchema.parse({
      api: 'anthropic-messages',
      baseUrl: api.url,
      apiKey: 'sk-ant-wrong-999999',
    });
    const err = await rejection(createAnthropicProvider('claude', config, fast).complete(request()));
    assert.equal(err.code, 'provider_http');
    assert.equal(err.status, 401);
    assert.equal(err.retryable, false);
    assert.match(err.message, /HTTP 401: authentication_error: invalid x-api-key/);
    assert.doesNotMatch(err.message, /wrong-999999/);
    assert.equal(api.calls.length, 1);
  });

  it('a request the API rejects (400) is not retried and says why', async () => {
    const err = await rejection(
      provider(api, { maxAttempts: 3 }).complete(request({ messages: [{ role: 'user', content: '' }] })),
    );
    assert.equal(err.status, 400);
    assert.equal(err.retryable, false);
    assert.match(err.message, /invalid_request_error: messages\.0: all messages must have non-empty content/);
    assert.equal(api.calls.length, 1);
  });

  it('529 overloaded is retried and recovers', async () => {
    api.setMode('overloaded', { times: 1, retryAfter: '0' });
    const reply = await provider(api, { maxAttempts: 2 }).complete(request());
    assert.equal(reply.text, 'standin: hello there');
    assert.deepEqual(
      api.calls.map((c) => c.status),
      [529, 200],
    );
  });

  it('429 rate_limit_error: retryable with retryAfterMs from retry-after', async () => {
    api.setMode('rate-limit', { retryAfter: '7' });
    const err = await rejection(provider(api, { maxAttempts: 1 }).complete(request()));
    assert.equal(err.status, 429);
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, 7000);
    assert.match(err.message, /rate_limit_error/);
  });

  it('500 api_error exhausts maxAttempts', async () => {
    api.setMode('server-error');
    const err = await rejection(provider(api, { maxAttempts: 2 }).complete(request()));
    assert.equal(err.status, 500);
    assert.equal(err.retryable, true);
    assert.equal(api.calls.length, 2);
  });

  it('garbage and wrong shapes are provider_bad_response, not retried', async () => {
    api.setMode('garbage');
    let err = await rejection(provider(api, { maxAttempts: 3 }).complete(request()));
    assert.equal(err.code, 'provider_bad_response');
    assert.equal(err.retryable, false);
    api.setMode('bad-shape');
    err = await rejection(provider(api, { maxAttempts: 3 }).complete(request()));
    assert.equal(err.code, 'provider_bad_response');
    assert.equal(api.calls.length, 2);
  });

  it('a hang ends with provider_timeout when the run signal aborts', async () => {
    api.setMode('hang');
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 100);
    const err = await rejection(provider(api).complete(request({ signal: ctrl.signal })));
    assert.equal(err.code, 'provider_timeout');
    assert.equal(err.retryable, false);
  });
});
