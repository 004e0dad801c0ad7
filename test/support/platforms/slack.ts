/**
 * A stand-in for the Slack Web API (https://api.slack.com/methods/chat.postMessage).
 * Checks what Slack checks: the method path, the bearer token, channel and text present, the bot's access to the
 * conversation, text at most 40,000 characters. Answers as Slack does: HTTP 200 with { ok:false, error } for
 * every error except rate limiting, which is HTTP 429 with Retry-After.
 */
import { bearer, failureOutcome, obj, startStandIn, type Outcome, type Reply, type StandIn } from './base.js';

export const SLACK_TEST_TOKEN = 'xoxb-1111-2222-hookgateTestToken';

export interface SlackMessage {
  channel: string;
  text: string;
  ts: string;
}

export interface SlackStandInOptions {
  token?: string;
  /** Conversations the bot is a member of. */
  channels?: string[];
  /** Conversations that exist but the bot was not invited to. */
  notInChannel?: string[];
  archived?: string[];
  /** Retry-After of the rate-limit answer, seconds. */
  retryAfterS?: number;
}

const slackError = (error: string, extra: object = {}): Reply => ({
  status: 200,
  body: { ok: false, error, ...extra },
});

export async function startSlack(options: SlackStandInOptions = {}): Promise<StandIn<SlackMessage>> {
  const token = options.token ?? SLACK_TEST_TOKEN;
  const channels = new Set(options.channels ?? ['C0123456789', 'D0123456789']);
  const notInChannel = new Set(options.notInChannel ?? []);
  const archived = new Set(options.archived ?? []);
  const retryAfterS = options.retryAfterS ?? 3;
  let tsSeq = 100;

  return startStandIn<SlackMessage>((req, ctx): Outcome => {
    if (req.path !== '/chat.postMessage' && req.path !== '/auth.test')
      return { status: 404, body: { ok: false, error: 'unknown_method' } };
    if (req.method !== 'POST' && req.method !== 'GET') return slackError('method_not_supported_for_channel_type');
    const presented =
      bearer(req.headers) ?? (typeof obj(req.body).token === 'string' ? String(obj(req.body).token) : undefined);
    if (!presented) return slackError('not_authed');
    if (presented !== token) return slackError('invalid_auth');
    if (req.path === '/auth.test') {
      return {
        status: 200,
        body: {
          ok: true,
          url: 'https://hookgate-test.slack.com/',
          team: 'hookgate test',
          user: 'hookgate_bot',
          team_id: 'T0HOOKGATE',
          user_id: 'U0HOOKGATE',
          bot_id: 'B0HOOKGATE',
          is_enterprise_install: false,
        },
      };
    }

    const failure = ctx.takeFailure();
    if (failure) {
      return failureOutcome(failure, (kind) =>
        kind === 'rate_limit'
          ? { status: 429, headers: { 'retry-after': String(retryAfterS) }, body: { ok: false, error: 'ratelimited' } }
          : slackError('internal_error'),
      );
    }

    const body = obj(req.body);
    const contentType = String(req.headers['content-type'] ?? '');
    // Slack accepts JSON without a charset but says so.
    const warning =
      contentType.startsWith('application/json') && !/charset=utf-8/i.test(contentType)
        ? { warning: 'missing_charset', response_metadata: { warnings: ['missing_charset'] } }
        : {};
    const channel = typeof body.channel === 'string' ? body.channel : '';
    const text = typeof body.text === 'string' ? body.text : '';
    if (!channel || !(channels.has(channel) || notInChannel.has(channel) || archived.has(channel))) {
      return slackError('channel_not_found', warning);
    }
    if (notInChannel.has(channel)) return slackError('not_in_channel', warning);
    if (archived.has(channel)) return slackError('is_archived', warning);
    if (!text.trim()) return slackError('no_text', warning);
    if (text.length > 40_000) return slackError('msg_too_long', warning);

    const ts = `1700000000.${String(tsSeq++).padStart(6, '0')}`;
    ctx.accept({ channel, text, ts });
    return {
      status: 200,
      body: { ok: true, channel, ts, message: { type: 'message', text, ts, bot_id: 'B0HOOKGATE' }, ...warning },
    };
  });
}
