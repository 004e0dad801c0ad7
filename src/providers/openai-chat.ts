/**
 * OpenAI-compatible Chat Completions: `POST {baseUrl}/chat/completions`, non-streaming.
 * Spoken by OpenAI, OpenRouter, Ollama, vLLM, llama.cpp server, LM Studio.
 */
import { joinUrl } from '../http-util.js';
import type { ProviderConfig } from '../config/schema/models.js';
import { badResponse, checkModelList, mergeHeaders, postJson } from './http.js';
import { policyOf, withRetry, type ProviderOptions } from './retry.js';
import { asRecord, usageOf } from './shape.js';
import type { ModelProvider, ModelReply, ModelRequest } from './types.js';

export type OpenAIChatConfig = Extract<ProviderConfig, { api: 'openai-chat' }>;

/** `thinking` → `reasoning_effort`: `off` (or unset) sends nothing; any other level is passed through as is. */
export function reasoningEffort(thinking: string | undefined): string | undefined {
  const t = thinking?.trim().toLowerCase();
  return !t || t === 'off' ? undefined : t;
}

export function buildOpenAIChatBody(request: Omit<ModelRequest, 'signal'>): Record<string, unknown> {
  const messages: Array<{ role: string; content: string }> = [];
  if (request.system) messages.push({ role: 'system', content: request.system });
  for (const m of request.messages) messages.push({ role: m.role, content: m.content });
  const body: Record<string, unknown> = { model: request.model, messages, stream: false };
  const effort = reasoningEffort(request.thinking);
  if (effort) body['reasoning_effort'] = effort;
  return body;
}

/** `choices[0].message.content` as a string (or the text parts of the array form), plus usage when given. */
export function parseOpenAIChatReply(json: unknown, label: string): ModelReply {
  const root = asRecord(json);
  const choices = root?.['choices'];
  if (!Array.isArray(choices)) throw badResponse(label, 'no choices array');
  if (choices.length === 0) throw badResponse(label, 'empty choices');
  const message = asRecord(asRecord(choices[0])?.['message']);
  if (!message) throw badResponse(label, 'choices[0] has no message');
  const text =
    contentText(message['content']) ?? (typeof message['refusal'] === 'string' ? message['refusal'] : undefined);
  if (text === undefined) throw badResponse(label, 'choices[0].message.content is not text');
  const reply: ModelReply = { text };
  const u = asRecord(root?.['usage']);
  const usage = u && usageOf(u['prompt_tokens'], u['completion_tokens']);
  if (usage) reply.usage = usage;
  return reply;
}

function contentText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  // Array-of-parts form: [{ type: "text", text }, ...]; non-text parts (images, audio) are skipped.
  const parts: string[] = [];
  for (const part of content) {
    const p = asRecord(part);
    if (p && (p['type'] === 'text' || p['type'] === 'output_text') && typeof p['text'] === 'string')
      parts.push(p['text']);
  }
  return parts.length > 0 ? parts.join('') : undefined;
}

export function createOpenAIChatProvider(
  id: string,
  config: OpenAIChatConfig,
  options: ProviderOptions = {},
): ModelProvider {
  const label = `openai-chat provider "${id}"`;
  const url = joinUrl(config.baseUrl, 'chat/completions');
  // apiKey wins over an Authorization in `headers` (fetch would otherwise join both values).
  const headers = mergeHeaders(config.headers, config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {});
  const secrets = [config.apiKey, ...Object.values(config.headers ?? {})];
  const policy = policyOf(config, options);
  return {
    id,
    api: 'openai-chat',
    async complete(request) {
      const body = buildOpenAIChatBody(request);
      return withRetry(label, policy, request.signal, async (signal) => {
        const { json } = await postJson({ url, headers, body, signal, label, secrets });
        return parseOpenAIChatReply(json, label);
      });
    },
    check: (signal) =>
      checkModelList(
        { url: joinUrl(config.baseUrl, 'models'), headers, signal, label, secrets },
        'check apiKey (and headers) of this provider',
      ),
  };
}
