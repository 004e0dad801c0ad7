/**
 * A stand-in for the Telegram Bot API (https://core.telegram.org/bots/api), enough for sendMessage.
 * Checks what Telegram checks: the token in /bot<token>/<method>, the method name, chat_id and text present,
 * text non-blank and at most 4096 characters, the chat known to the bot. Answers as Telegram does:
 * { ok, result } or { ok:false, error_code, description, parameters? } with the HTTP status equal to error_code.
 */
import { failureOutcome, obj, startStandIn, type Outcome, type Reply, type StandIn } from './base.js';

export const TELEGRAM_TEST_TOKEN = '123456789:AAH-test_token-for-hookgate';

export interface TelegramMessage {
  chatId: string;
  text: string;
  messageId: number;
}

export interface TelegramStandInOptions {
  token?: string;
  /**
   * More bots this stand-in serves, as api.telegram.org serves every bot: a send under any of these tokens is
   * accepted too, and `requests` shows which token's path it came in on.
   */
  extraTokens?: string[];
  /** Chats the bot can write to. */
  chats?: string[];
  /** Users who blocked the bot (403). */
  blocked?: string[];
  /** Groups upgraded to supergroups: old id → new id (400 with migrate_to_chat_id). */
  migrated?: Record<string, string>;
  /** parameters.retry_after of the rate-limit answer, in seconds. */
  retryAfterS?: number;
}

const err = (code: number, description: string, parameters?: object): Reply => ({
  status: code,
  body: { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) },
});

export async function startTelegram(options: TelegramStandInOptions = {}): Promise<StandIn<TelegramMessage>> {
  const tokens = new Set([options.token ?? TELEGRAM_TEST_TOKEN, ...(options.extraTokens ?? [])]);
  const chats = new Set(options.chats ?? ['1001', '-1001234567890', '@hookgate_test']);
  const blocked = new Set(options.blocked ?? []);
  const migrated = options.migrated ?? {};
  const retryAfterS = options.retryAfterS ?? 7;
  let nextId = 1;

  return startStandIn<TelegramMessage>((req, ctx): Outcome => {
    const m = /^\/bot([^/]*)\/([^/]+)$/.exec(req.path);
    if (!m) return err(404, 'Not Found');
    if (!tokens.has(decodeURIComponent(m[1] ?? ''))) return err(401, 'Unauthorized');
    const method = (m[2] ?? '').toLowerCase();
    if (method === 'getme') {
      // getMe: the bot's User object; the id is the number before the colon of its token.
      const token = decodeURIComponent(m[1] ?? '');
      return {
        status: 200,
        body: {
          ok: true,
          result: {
            id: Number(token.split(':')[0]),
            is_bot: true,
            first_name: 'hookgate test',
            username: 'hookgate_test_bot',
            can_join_groups: true,
            can_read_all_group_messages: false,
            supports_inline_queries: false,
          },
        },
      };
    }
    if (method !== 'sendmessage') return err(404, 'Not Found: method not found');
    if (req.method !== 'POST' && req.method !== 'GET') return err(405, 'Method Not Allowed');

    const failure = ctx.takeFailure();
    if (failure) {
      return failureOutcome(failure, (kind) =>
        kind === 'rate_limit'
          ? err(429, `Too Many Requests: retry after ${retryAfterS}`, { retry_after: retryAfterS })
          : err(500, 'Internal Server Error'),
      );
    }

    // Telegram takes parameters from the query string, a form or a JSON body.
    const body = { ...Object.fromEntries(req.query), ...obj(req.body) };
    const chatId = body.chat_id === undefined ? '' : String(body.chat_id);
    const text = typeof body.text === 'string' ? body.text : '';
    if (!chatId) return err(400, 'Bad Request: chat_id is empty');
    if (!text.trim()) return err(400, 'Bad Request: message text is empty');
    if (text.length > 4096) return err(400, 'Bad Request: message is too long');
    const newId = migrated[chatId];
    if (newId !== undefined) {
      return err(400, 'Bad Request: group chat was upgraded to a supergroup chat', {
        migrate_to_chat_id: Number(newId),
      });
    }
    if (blocked.has(chatId)) return err(403, 'Forbidden: bot was blocked by the user');
    if (!chats.has(chatId)) return err(400, 'Bad Request: chat not found');

    const messageId = nextId++;
    ctx.accept({ chatId, text, messageId });
    return {
      status: 200,
      body: {
        ok: true,
        result: {
          message_id: messageId,
          from: { id: 123456789, is_bot: true },
          chat: { id: chatId },
          date: Math.floor(Date.now() / 1000),
          text,
        },
      },
    };
  });
}
