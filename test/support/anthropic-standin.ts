/**
 * A local stand-in for the Anthropic Messages API (`POST /v1/messages`), on 127.0.0.1.
 * It checks what the real API checks (x-api-key, anthropic-version, JSON body, model, max_tokens, messages with roles
 * user/assistant and non-empty content, system as a top-level field, thinking budget ≥ 1024 and < max_tokens) and
 * answers with the real shapes: `message` objects (a `thinking` block before the text when thinking is enabled) and
 * `{ type: "error", error: { type, message }, request_id }` bodies. Modes simulate failures.
 *
 *   const claude = await startAnthropicStandin();    // apiKey "test-key"
 *   provider config: { api: 'anthropic-messages', baseUrl: claude.url, apiKey: 'test-key' }
 *   claude.setMode('overloaded', { times: 1 });      // next request gets 529, then back to 'ok'
 *   claude.requests[0]?.max_tokens
 *   await claude.close();
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  parseJsonObject,
  readBody,
  standinKit,
  type ModelStandin,
  type ModeOptions,
  type StandinCall,
} from './model-standin.js';

export type AnthropicStandinMode =
  | 'ok'
  | 'unauthorized' // 401 authentication_error whatever the key
  | 'rate-limit' // 429 rate_limit_error + retry-after
  | 'server-error' // 500 api_error
  | 'overloaded' // 529 overloaded_error
  | 'garbage' // 200 with a truncated JSON body
  | 'bad-shape' // 200 JSON without a content array
  | 'hang'; // accepts the request, never answers

export interface AnthropicRequestBody {
  model?: unknown;
  max_tokens?: unknown;
  system?: unknown;
  messages?: Array<{ role?: unknown; content?: unknown }>;
  thinking?: { type?: unknown; budget_tokens?: unknown };
  [key: string]: unknown;
}

export type AnthropicStandinCall = StandinCall;

export interface AnthropicStandinOptions {
  /** The expected `x-api-key`. */
  apiKey?: string;
}

/** `retryAfter` is the retry-after header of 'rate-limit' / 'overloaded'. */
export type AnthropicModeOptions = ModeOptions;

export interface AnthropicStandin extends ModelStandin<AnthropicStandinMode, AnthropicRequestBody> {
  /** The baseUrl to configure: `http://127.0.0.1:<port>` (the provider adds /v1/messages). */
  url: string;
}

const VERSIONS = new Set(['2023-06-01', '2023-01-01']);

export async function startAnthropicStandin(options: AnthropicStandinOptions = {}): Promise<AnthropicStandin> {
  const apiKey = options.apiKey ?? 'test-key';
  const kit = standinKit<AnthropicStandinMode, AnthropicRequestBody>();
  let served = 0;

  // Every answer carries the id of the call it records.
  const send = (
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) => kit.send(req, res, status, body, { 'request-id': `req_standin_${kit.calls.length + 1}`, ...headers });
  const fail = (
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    type: string,
    message: string,
    headers?: Record<string, string>,
  ) =>
    send(
      req,
      res,
      status,
      { type: 'error', error: { type, message }, request_id: `req_standin_${kit.calls.length + 1}` },
      headers,
    );

  // GET /v1/models: the same key and version checks, then { data: [{ type: "model", id, display_name, created_at }], has_more, first_id, last_id }.
  const listModels = (req: IncomingMessage, res: ServerResponse) => {
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || !key)
      return fail(req, res, 401, 'authentication_error', 'x-api-key header is required');
    if (key !== apiKey || kit.takeMode().mode === 'unauthorized')
      return fail(req, res, 401, 'authentication_error', 'invalid x-api-key');
    const version = req.headers['anthropic-version'];
    if (typeof version !== 'string' || !VERSIONS.has(version))
      return fail(req, res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    const data = ['claude-sonnet-4-5', 'claude-haiku-4-5'].map((id) => ({
      type: 'model',
      id,
      display_name: id,
      created_at: '2025-09-29T00:00:00Z',
    }));
    return send(req, res, 200, { data, has_more: false, first_id: data[0]!.id, last_id: data.at(-1)!.id });
  };

  return kit.serve(async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const raw = await readBody(req);
    if (req.method === 'GET' && path === '/v1/models') return listModels(req, res);
    if (path !== '/v1/messages') return fail(req, res, 404, 'not_found_error', 'Not Found');
    if (req.method !== 'POST') return fail(req, res, 405, 'invalid_request_error', `Method Not Allowed`);
    const { mode: current, retryAfter } = kit.takeMode();
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || !key)
      return fail(req, res, 401, 'authentication_error', 'x-api-key header is required');
    if (key !== apiKey || current === 'unauthorized')
      return fail(req, res, 401, 'authentication_error', 'invalid x-api-key');
    const version = req.headers['anthropic-version'];
    if (typeof version !== 'string' || !version)
      return fail(req, res, 400, 'invalid_request_error', 'anthropic-version: header is required');
    if (!VERSIONS.has(version))
      return fail(req, res, 400, 'invalid_request_error', `anthropic-version: invalid version '${version}'`);
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      return fail(req, res, 400, 'invalid_request_error', 'Content-Type must be application/json');
    }
    const body = parseJsonObject<AnthropicRequestBody>(raw);
    if (!body) {
      return fail(
        req,
        res,
        400,
        'invalid_request_error',
        'There was an issue with the format or content of your request: the body is not valid JSON.',
      );
    }
    kit.requests.push(body);
    const invalid = validate(body);
    if (invalid) return fail(req, res, 400, 'invalid_request_error', invalid);

    switch (current) {
      case 'rate-limit':
        return fail(
          req,
          res,
          429,
          'rate_limit_error',
          'This request would exceed the rate limit for your organization of 50 requests per minute.',
          { 'retry-after': retryAfter },
        );
      case 'server-error':
        return fail(req, res, 500, 'api_error', 'Internal server error');
      case 'overloaded':
        return fail(req, res, 529, 'overloaded_error', 'Overloaded', { 'retry-after': retryAfter });
      case 'garbage':
        return send(req, res, 200, '{"id":"msg_standin","type":"message","content":[{"type":"te');
      case 'bad-shape':
        return send(req, res, 200, {
          id: 'msg_standin',
          type: 'message',
          role: 'assistant',
          model: body.model,
          stop_reason: 'end_turn',
        });
      case 'hang':
        return kit.hang(req);
      default:
        break;
    }
    const text = kit.reply(body);
    const content: unknown[] = [];
    if (body.thinking?.type === 'enabled') {
      content.push({ type: 'thinking', thinking: 'The standin considers the request.', signature: 'c3RhbmRpbg==' });
    }
    content.push({ type: 'text', text });
    send(req, res, 200, {
      id: `msg_standin_${++served}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: Math.ceil(JSON.stringify(body.messages).length / 4),
        output_tokens: Math.ceil(text.length / 4),
      },
    });
  });
}

/** The messages of the real API's 400s, in the order it checks. */
function validate(body: AnthropicRequestBody): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required';
  if (body.max_tokens === undefined) return 'max_tokens: Field required';
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens) || body.max_tokens < 1) {
    return 'max_tokens: Input should be a valid integer greater than or equal to 1';
  }
  if (body.messages === undefined) return 'messages: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  for (const [i, m] of body.messages.entries()) {
    if (m?.role === 'system') {
      return 'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.';
    }
    if (m?.role !== 'user' && m?.role !== 'assistant')
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const last = i === body.messages.length - 1;
    const empty = m.content === '' || (Array.isArray(m.content) && m.content.length === 0);
    if (typeof m.content !== 'string' && !Array.isArray(m.content)) return `messages.${i}.content: Field required`;
    if (empty && !(last && m.role === 'assistant')) {
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    }
  }
  if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system)) {
    return 'system: Input should be a valid string';
  }
  if (body.thinking !== undefined) {
    const t = body.thinking;
    if (t.type === 'enabled') {
      if (typeof t.budget_tokens !== 'number' || !Number.isInteger(t.budget_tokens))
        return 'thinking.enabled.budget_tokens: Field required';
      if (t.budget_tokens < 1024)
        return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
      if (body.max_tokens <= t.budget_tokens)
        return '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';
    } else if (t.type !== 'disabled') {
      return "thinking: Input tag does not match any of the expected tags: 'enabled', 'disabled'";
    }
  }
  return undefined;
}
