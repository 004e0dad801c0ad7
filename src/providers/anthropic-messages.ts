/** Anthropic Messages API: `POST {baseUrl}/v1/messages`, non-streaming. */
import { joinUrl } from '../http-util.js';
import type { ProviderConfig } from '../config/schema/models.js';
import { badResponse, checkModelList, mergeHeaders, postJson } from './http.js';
import { policyOf, withRetry, type ProviderOptions } from './retry.js';
import { asRecord, usageOf } from './shape.js';
import type { ModelProvider, ModelReply, ModelRequest } from './types.js';

export type AnthropicConfig = Extract<ProviderConfig, { api: 'anthropic-messages' }>;

/**
 * Extended-thinking budget (`budget_tokens`) per level. The API's minimum is 1024; `high` stays below 32k so that
 * budget + the configured maxTokens (default 4096) fits the smallest output limit of the thinking-capable models.
 * A plain number ("8000") is taken as the budget itself (at least 1024). `off`, unset or any other value: no thinking.
 */
export const THINKING_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 4096,
  medium: 10_000,
  high: 24_000,
};
export const MIN_THINKING_BUDGET = 1024;

export function thinkingBudget(thinking: string | undefined): number | undefined {
  const t = thinking?.trim().toLowerCase();
  if (!t || t === 'off') return undefined;
  if (/^\d+$/.test(t)) return Math.max(MIN_THINKING_BUDGET, Number(t));
  return THINKING_BUDGETS[t];
}

export function buildAnthropicBody(request: Omit<ModelRequest, 'signal'>, maxTokens: number): Record<string, unknown> {
  const budget = thinkingBudget(request.thinking);
  const body: Record<string, unknown> = {
    model: request.model,
    // max_tokens counts thinking too: the reply keeps its configured room on top of the budget.
    max_tokens: budget === undefined ? maxTokens : budget + maxTokens,
  };
  if (request.system) body['system'] = request.system;
  body['messages'] = request.messages.map((m) => ({ role: m.role, content: m.content }));
  if (budget !== undefined) body['thinking'] = { type: 'enabled', budget_tokens: budget };
  return body;
}

/** The `text` blocks of `content`, concatenated; `thinking` / `redacted_thinking` / tool blocks are skipped. */
export function parseAnthropicReply(json: unknown, label: string): ModelReply {
  const root = asRecord(json);
  const content = root?.['content'];
  if (!Array.isArray(content)) throw badResponse(label, 'no content array');
  let text = '';
  for (const block of content) {
    const b = asRecord(block);
    if (!b || typeof b['type'] !== 'string') throw badResponse(label, 'a content block has no type');
    if (b['type'] !== 'text') continue;
    if (typeof b['text'] !== 'string') throw badResponse(label, 'a text block has no text');
    text += b['text'];
  }
  const reply: ModelReply = { text };
  const u = asRecord(root?.['usage']);
  const usage = u && usageOf(u['input_tokens'], u['output_tokens']);
  if (usage) reply.usage = usage;
  return reply;
}

export function createAnthropicProvider(
  id: string,
  config: AnthropicConfig,
  options: ProviderOptions = {},
): ModelProvider {
  const label = `anthropic-messages provider "${id}"`;
  const url = joinUrl(config.baseUrl, 'v1/messages');
  // Without a key the request still goes out: a local proxy may add credentials itself.
  const headers = mergeHeaders(config.headers, {
    'anthropic-version': config.anthropicVersion,
    ...(config.apiKey ? { 'x-api-key': config.apiKey } : {}),
  });
  const secrets = [config.apiKey, ...Object.values(config.headers ?? {})];
  const policy = policyOf(config, options);
  return {
    id,
    api: 'anthropic-messages',
    async complete(request) {
      const body = buildAnthropicBody(request, config.maxTokens);
      return withRetry(label, policy, request.signal, async (signal) => {
        const { json } = await postJson({ url, headers, body, signal, label, secrets });
        return parseAnthropicReply(json, label);
      });
    },
    check: (signal) =>
      checkModelList(
        { url: joinUrl(config.baseUrl, 'v1/models'), headers, signal, label, secrets },
        'check apiKey (an Anthropic API key, sk-ant-...)',
      ),
  };
}
