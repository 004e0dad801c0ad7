import type { AbortLike } from '../deadline.js';
import type { CheckResult } from '../check.js';
import { HookgateError, type ProviderErrorCode } from '../errors.js';

/** One turn of a conversation as sent to a model. */
export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

export interface ModelRequest {
  /** The provider-local model name (the part after `<provider>/`). */
  model: string;
  /** System prompt of the agent, if any. */
  system?: string;
  /** Earlier turns (persistent sessions) followed by the new user message. */
  messages: ChatMessage[];
  /** Reasoning level: off | minimal | low | medium | high, or a provider-specific value. */
  thinking?: string;
  /** Aborted when the run's timeoutSeconds elapses or the service stops. */
  signal: AbortLike;
}

export interface ModelReply {
  text: string;
  usage?: { inputTokens?: number; outputTokens?: number };
}

export interface ModelProvider {
  /** The id under `models.providers` (or `echo`). */
  readonly id: string;
  /** The wire protocol: openai-chat | anthropic-messages | command | echo. */
  readonly api: string;
  complete(request: ModelRequest): Promise<ModelReply>;
  /** `hookgate doctor`: a call that costs nothing where the API has one (the model list), else a local check. */
  check?(signal: AbortSignal): Promise<CheckResult>;
  close?(): Promise<void>;
}

export type { ProviderErrorCode };

export class ProviderError extends HookgateError {
  declare readonly code: ProviderErrorCode;
  /** Whether retrying the same request later may succeed (429, 5xx, connection refused). */
  readonly retryable: boolean;
  /** From a Retry-After answer, when the server gave one. */
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;
  constructor(
    code: ProviderErrorCode,
    message: string,
    opts: { retryable: boolean; retryAfterMs?: number; status?: number; cause?: unknown },
  ) {
    super(code, message, { cause: opts.cause });
    this.retryable = opts.retryable;
    this.retryAfterMs = opts.retryAfterMs;
    this.status = opts.status;
  }
}
