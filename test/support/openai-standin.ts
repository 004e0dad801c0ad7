/**
 * A local stand-in for an OpenAI-compatible Chat Completions server (OpenAI, Ollama, vLLM...), on 127.0.0.1.
 * It checks what the real service checks (path, method, bearer key, JSON body, model, messages and their roles,
 * reasoning_effort) and answers with the real shapes: chat.completion objects and `{ error: { message, type, param,
 * code } }` bodies. Modes simulate failures: bad key, 429 with Retry-After, 500, a garbage body, empty choices,
 * the array-of-parts content form, and a hang (never answers).
 *
 *   const ai = await startOpenAIStandin();           // apiKey "test-key"; { apiKey: null } accepts any (Ollama)
 *   provider config: { api: 'openai-chat', baseUrl: ai.url, apiKey: 'test-key' }
 *   ai.setMode('rate-limit', { times: 1 });          // next request gets 429, then back to 'ok'
 *   ai.requests[0]?.messages                          // bodies received on /chat/completions
 *   await ai.close();
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseJsonObject, readBody, standinKit, type ModelStandin } from './model-standin.js';

export type { ModeOptions, StandinCall } from './model-standin.js';

export type OpenAIStandinMode =
  | 'ok'
  | 'unauthorized' // 401 whatever the key
  | 'rate-limit' // 429 + Retry-After
  | 'server-error' // 500
  | 'garbage' // 200 with a truncated JSON body
  | 'empty-choices' // 200 with choices: []
  | 'parts' // 200 with message.content as an array of text parts
  | 'hang'; // accepts the request, never answers

export interface OpenAIChatRequestBody {
  model?: unknown;
  messages?: Array<{ role?: unknown; content?: unknown }>;
  stream?: unknown;
  reasoning_effort?: unknown;
  [key: string]: unknown;
}

export interface OpenAIStandinOptions {
  /** The key expected as `Authorization: Bearer <key>`; null accepts requests without auth (like Ollama). */
  apiKey?: string | null;
  /** Known model names; others get 404 model_not_found. Any model when unset. */
  models?: string[];
}

export interface OpenAIStandin extends ModelStandin<OpenAIStandinMode, OpenAIChatRequestBody> {
  /** The baseUrl to configure: `http://127.0.0.1:<port>/v1`. */
  url: string;
}

const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);
const EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh']);

export async function startOpenAIStandin(options: OpenAIStandinOptions = {}): Promise<OpenAIStandin> {
  const apiKey = options.apiKey === undefined ? 'test-key' : options.apiKey;
  const kit = standinKit<OpenAIStandinMode, OpenAIChatRequestBody>();
  let served = 0;

  const fail = (
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    message: string,
    type: string,
    code: string | null = null,
    param: string | null = null,
    headers?: Record<string, string>,
  ) => kit.send(req, res, status, { error: { message, type, param, code } }, headers);

  // GET /v1/models: { object: "list", data: [{ id, object: "model", created, owned_by }] }, behind the same key check.
  const listModels = (req: IncomingMessage, res: ServerResponse) => {
    const m = /^Bearer (.+)$/.exec(String(req.headers['authorization'] ?? ''));
    if (apiKey !== null && !m)
      return fail(
        req,
        res,
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        'invalid_request_error',
      );
    if ((apiKey !== null && m?.[1] !== apiKey) || kit.takeMode().mode === 'unauthorized') {
      return fail(
        req,
        res,
        401,
        `Incorrect API key provided: ${m?.[1] ?? ''}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        'invalid_request_error',
        'invalid_api_key',
      );
    }
    const data = (options.models ?? ['gpt-4o-mini', 'gpt-4o']).map((id) => ({
      id,
      object: 'model',
      created: 1_700_000_000,
      owned_by: 'standin',
    }));
    return kit.send(req, res, 200, { object: 'list', data });
  };

  return kit.serve(async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const raw = await readBody(req);
    if (req.method === 'GET' && path === '/v1/models') return listModels(req, res);
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      return fail(req, res, 404, `Invalid URL (${req.method} ${path})`, 'invalid_request_error');
    }
    const { mode: current, retryAfter } = kit.takeMode();
    if (apiKey !== null) {
      const auth = req.headers['authorization'];
      const m = typeof auth === 'string' ? /^Bearer (.+)$/.exec(auth) : null;
      if (!m) {
        return fail(
          req,
          res,
          401,
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
          'invalid_request_error',
        );
      }
      // The real service masks the middle of the key; some compatible proxies echo it whole. The worst case is tested.
      if (m[1] !== apiKey || current === 'unauthorized') {
        return fail(
          req,
          res,
          401,
          `Incorrect API key provided: ${m[1]}. You can find your API key at https://platform.openai.com/account/api-keys.`,
          'invalid_request_error',
          'invalid_api_key',
        );
      }
    } else if (current === 'unauthorized') {
      return fail(req, res, 401, 'Incorrect API key provided.', 'invalid_request_error', 'invalid_api_key');
    }
    if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
      return fail(
        req,
        res,
        400,
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
        'invalid_request_error',
      );
    }
    const body = parseJsonObject<OpenAIChatRequestBody>(raw);
    if (!body) return fail(req, res, 400, 'We could not parse the JSON body of your request.', 'invalid_request_error');
    kit.requests.push(body);
    const invalid = validate(body, options.models);
    if (invalid)
      return fail(req, res, invalid.status, invalid.message, 'invalid_request_error', invalid.code, invalid.param);
    switch (current) {
      case 'rate-limit':
        return fail(
          req,
          res,
          429,
          `Rate limit reached for ${String(body.model)} on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.`,
          'requests',
          'rate_limit_exceeded',
          null,
          { 'retry-after': retryAfter },
        );
      case 'server-error':
        return fail(
          req,
          res,
          500,
          'The server had an error while processing your request. Sorry about that!',
          'server_error',
        );
      case 'garbage':
        return kit.send(req, res, 200, '{"id":"chatcmpl-standin","choices":[{"index":0,"message":{"role":"assis');
      case 'hang':
        return kit.hang(req);
      default:
        break;
    }
    const text = kit.reply(body);
    const content = current === 'parts' ? splitParts(text) : text;
    const promptTokens = Math.ceil(JSON.stringify(body.messages).length / 4);
    const completionTokens = Math.ceil(text.length / 4);
    kit.send(req, res, 200, {
      id: `chatcmpl-standin-${++served}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices:
        current === 'empty-choices'
          ? []
          : [
              {
                index: 0,
                message: { role: 'assistant', content, refusal: null },
                logprobs: null,
                finish_reason: 'stop',
              },
            ],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
      system_fingerprint: 'fp_standin',
    });
  }, '/v1');
}

function validate(
  body: OpenAIChatRequestBody,
  models: string[] | undefined,
): { status: number; message: string; code: string | null; param: string | null } | undefined {
  if (typeof body.model !== 'string' || !body.model) {
    return { status: 400, message: 'you must provide a model parameter', code: null, param: null };
  }
  if (body.messages === undefined) {
    return {
      status: 400,
      message: "Missing required parameter: 'messages'.",
      code: 'missing_required_parameter',
      param: 'messages',
    };
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return {
      status: 400,
      message:
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      code: 'empty_array',
      param: 'messages',
    };
  }
  for (const [i, m] of body.messages.entries()) {
    if (!m || typeof m !== 'object' || typeof m.role !== 'string' || !ROLES.has(m.role)) {
      return {
        status: 400,
        message: `Invalid value: '${String(m?.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        code: 'invalid_value',
        param: `messages[${i}].role`,
      };
    }
    if (m.role !== 'assistant' && typeof m.content !== 'string' && !Array.isArray(m.content)) {
      return {
        status: 400,
        message: `Missing required parameter: 'messages[${i}].content'.`,
        code: 'missing_required_parameter',
        param: `messages[${i}].content`,
      };
    }
  }
  if (body.stream === true) {
    return { status: 400, message: 'standin: streaming is not simulated', code: null, param: 'stream' };
  }
  if (
    body.reasoning_effort !== undefined &&
    (typeof body.reasoning_effort !== 'string' || !EFFORTS.has(body.reasoning_effort))
  ) {
    return {
      status: 400,
      message: `Invalid value: '${String(body.reasoning_effort)}'. Supported values are: 'minimal', 'low', 'medium', and 'high'.`,
      code: 'invalid_value',
      param: 'reasoning_effort',
    };
  }
  if (models && !models.includes(body.model)) {
    return {
      status: 404,
      message: `The model \`${body.model}\` does not exist or you do not have access to it.`,
      code: 'model_not_found',
      param: null,
    };
  }
  return undefined;
}

/** The same text as two text parts (the array-of-parts content form). */
function splitParts(text: string): Array<{ type: 'text'; text: string }> {
  const mid = Math.floor(text.length / 2);
  return [
    { type: 'text', text: text.slice(0, mid) },
    { type: 'text', text: text.slice(mid) },
  ];
}
