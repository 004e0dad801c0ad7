/**
 * A scriptable OpenAI-compatible Chat Completions server for runtime end-to-end tests, where timing matters:
 * every request goes to a handler the test controls (answer at once, after a delay, when a gate opens, never, or
 * with an error), and the server records each call with its start and end time and counts requests in flight.
 *
 *   const model = await startScriptedModel();
 *   provider config: { api: 'openai-chat', baseUrl: model.url, apiKey: 'test-key', maxAttempts: 1 }
 *   model.setHandler(async (call) => { await delay(1000); return `reply to ${call.lastUser.slice(0, 20)}`; });
 *   model.maxInFlight                                  // most requests answered at once so far
 *
 * It checks the bearer key and the JSON shape (model, messages) like the real API; the error-mode stand-in with
 * the real error bodies is test/support/openai-standin.ts.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenLocal, readBody } from './model-standin.js';

export interface ChatMessageIn {
  role: string;
  content: string;
}

export interface ScriptedCall {
  /** 0-based, in arrival order. */
  index: number;
  model: string;
  messages: ChatMessageIn[];
  /** Content of the last user message (the new prompt). */
  lastUser: string;
  /** True when the prompt is a heartbeat's (it lists the main session's system events). */
  heartbeat: boolean;
  body: Record<string, unknown>;
  startedAt: number;
  /** When the answer was sent or the client went away; undefined while in flight. */
  endedAt?: number;
  /** The status answered; 0 when the client went away first. */
  status?: number;
}

/** What a handler returns: reply text (200), an HTTP error, or 'hang' (never answer). */
export type ScriptedAnswer = string | { status: number; body?: unknown; headers?: Record<string, string> } | 'hang';
export type ScriptedHandler = (call: ScriptedCall) => ScriptedAnswer | Promise<ScriptedAnswer>;

export interface ScriptedModel {
  /** The baseUrl to configure: `http://127.0.0.1:<port>/v1`. */
  url: string;
  calls: ScriptedCall[];
  readonly inFlight: number;
  readonly maxInFlight: number;
  setHandler(handler: ScriptedHandler): void;
  /** Forget calls and the in-flight maximum (in-flight requests keep counting). */
  reset(): void;
  close(): Promise<void>;
}

export const SCRIPTED_API_KEY = 'test-key';

/** The heartbeat prompt starts with this line (src/runtime/prompt.ts). */
export const HEARTBEAT_PROMPT_MARK = /^System events \(\d+\):/;

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A promise the test opens by hand. */
export function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** `port`: listen on this port (a model that comes back where it was unreachable); default any free port. */
export async function startScriptedModel(
  handler: ScriptedHandler = (c) => `model: ${c.lastUser}`,
  opts: { port?: number } = {},
): Promise<ScriptedModel> {
  const calls: ScriptedCall[] = [];
  let current = handler;
  let inFlight = 0;
  let maxInFlight = 0;

  const server = createServer((req, res) => void handle(req, res));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await readBody(req);
    const path = (req.url ?? '').split('?')[0];
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      if (res.destroyed || res.writableEnded) return;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    const error = (status: number, message: string) =>
      json(status, { error: { message, type: 'invalid_request_error', param: null, code: null } });
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return error(404, `Invalid URL (${req.method} ${path})`);
    if (req.headers.authorization !== `Bearer ${SCRIPTED_API_KEY}`) return error(401, 'Incorrect API key provided.');
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return error(400, 'We could not parse the JSON body of your request.');
    }
    const messages = Array.isArray(body.messages) ? (body.messages as Array<Record<string, unknown>>) : [];
    if (typeof body.model !== 'string' || messages.length === 0) return error(400, 'model and messages are required');
    const msgs = messages.map((m) => ({
      role: String(m.role),
      content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content),
    }));
    const lastUser = [...msgs].reverse().find((m) => m.role === 'user')?.content ?? '';
    const call: ScriptedCall = {
      index: calls.length,
      model: body.model,
      messages: msgs,
      lastUser,
      heartbeat: HEARTBEAT_PROMPT_MARK.test(lastUser),
      body,
      startedAt: Date.now(),
    };
    calls.push(call);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let done = false;
    const finish = (status: number) => {
      if (done) return;
      done = true;
      inFlight--;
      call.endedAt = Date.now();
      call.status = status;
    };
    res.on('close', () => finish(0));

    let answer: ScriptedAnswer;
    try {
      answer = await current(call);
    } catch (err) {
      answer = {
        status: 500,
        body: { error: { message: `scripted handler threw: ${String(err)}`, type: 'server_error' } },
      };
    }
    if (answer === 'hang') return; // the client's timeout (or close()) ends it
    if (res.destroyed) return finish(0);
    if (typeof answer === 'string') {
      finish(200);
      return json(200, {
        id: `chatcmpl-scripted-${call.index}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: answer, refusal: null },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    }
    finish(answer.status);
    return json(answer.status, answer.body ?? '', answer.headers);
  };

  const { port, close } = await listenLocal(server, opts.port);
  return {
    url: `http://127.0.0.1:${port}/v1`,
    calls,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    setHandler(next) {
      current = next;
    },
    reset() {
      calls.length = 0;
      maxInFlight = inFlight;
    },
    close,
  };
}
