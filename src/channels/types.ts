import type { CheckResult } from '../check.js';
import { type ChannelErrorCode, HookgateError } from '../errors.js';

/**
 * One message to deliver. `text` is one chunk already split to the channel's `maxTextLength`
 * (the outbox splits long replies and records which chunks were sent, so a retry never repeats one).
 */
export interface OutboundMessage {
  /** Stable id of this delivery (and chunk): the idempotency id towards platforms that take one. */
  deliveryId: string;
  channel: string;
  /** Recipient on the channel: chat id, channel id, phone number, conversation id, target name... */
  to: string;
  text: string;
  /** null for a heartbeat reply. */
  runId: string | null;
  sessionKey: string;
  agentId: string;
  hookName: string | null;
  /** ISO-8601 time the reply was produced. */
  createdAt: string;
}

export type SendResult =
  | { ok: true /** Platform message ids, for the record. */; platformIds?: string[] }
  | {
      ok: false;
      /** true: try again later (429, 5xx, network); false: dead-letter now (401, 403, 400 bad recipient...). */
      retryable: boolean;
      /** The platform's own wait hint (Retry-After header, Telegram parameters.retry_after, Discord retry_after). */
      retryAfterMs?: number;
      /** What went wrong, for people: no secrets, no message text. */
      error: string;
      status?: number;
    };

export interface Channel {
  /** The channel id used in `channel` fields: telegram, slack, ..., webhook, log, or a plugin's id. */
  readonly id: string;
  /** The platform's limit for one message's text, in characters. */
  readonly maxTextLength: number;
  send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult>;
  /**
   * `hookgate doctor`: the platform's "who am I" call with the configured credentials (Telegram getMe, Slack
   * auth.test...), mapped through the same error handling as `send`, so a refused token reads the same.
   */
  check?(signal: AbortSignal): Promise<CheckResult>;
  /**
   * The platform's rule for `to` (already trimmed): `undefined` when it has the shape of a recipient here, else that
   * shape, for a person ("a channel id: a snowflake, digits only"). Pure and cheap: it runs when a request is accepted
   * and again before every send. `recipientProblem` (recipients.ts) adds the rule every channel shares.
   */
  checkRecipient?(to: string): string | undefined;
  /** Release sockets (IRC), flush files (log). */
  close?(): Promise<void>;
}

export interface ChannelContext {
  /** Directory of the config file: relative paths (log file, service-account file) resolve against it. */
  configDir: string;
  logger: {
    info(obj: object, msg?: string): void;
    warn(obj: object, msg?: string): void;
    error(obj: object, msg?: string): void;
  };
}

export class ChannelError extends HookgateError {
  declare readonly code: ChannelErrorCode;
  constructor(code: ChannelErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
