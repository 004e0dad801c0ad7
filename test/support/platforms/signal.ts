/**
 * A stand-in for signal-cli-rest-api (bbernhard/signal-cli-rest-api), POST /v2/send.
 * Checks what it checks: JSON body, at least one recipient, a sending number, the number registered with
 * signal-cli, each recipient a Signal user or a known group. Answers as it does: 201 { timestamp }, every send error
 * as 400 { error: "<signal-cli message>" }, rate limiting as 429 { error, challenge_tokens, account }. It has no
 * authentication and no text limit (signal-cli sends long text as an attachment).
 * `server_error` answers what the REST API answers when signal-cli cannot reach Signal: a 400 with the IO error.
 */
import { failureOutcome, obj, startStandIn, type Outcome, type Reply, type StandIn } from './base.js';

export const SIGNAL_TEST_NUMBER = '+15550001111';

export interface SignalMessage {
  recipient: string;
  message: string;
  timestamp: string;
}

export interface SignalStandInOptions {
  /** Accounts registered with signal-cli. */
  accounts?: string[];
  /** Signal users (numbers, usernames, uuids) and groups (`group.<id>`). */
  recipients?: string[];
}

const restError = (status: number, error: string, extra: object = {}): Reply => ({ status, body: { error, ...extra } });

export async function startSignal(options: SignalStandInOptions = {}): Promise<StandIn<SignalMessage>> {
  const accounts = new Set(options.accounts ?? [SIGNAL_TEST_NUMBER]);
  const recipients = new Set(options.recipients ?? ['+15552223333', 'group.aG9va2dhdGUtdGVzdC1ncm91cA==']);
  let clock = 1_700_000_000_000;

  return startStandIn<SignalMessage>((req, ctx): Outcome => {
    if (req.method === 'GET' && req.path === '/v1/about') {
      return {
        status: 200,
        body: {
          versions: ['v1', 'v2'],
          build: 2,
          mode: 'json-rpc',
          version: '0.92',
          capabilities: { 'v2/send': ['quotes', 'mentions'] },
        },
      };
    }
    // GET /v1/accounts: the numbers registered or linked with signal-cli, a bare JSON array.
    if (req.method === 'GET' && req.path === '/v1/accounts') return { status: 200, body: [...accounts] };
    // gin's default 404 is plain text.
    if (req.path !== '/v2/send') return { status: 404, body: '404 page not found' };
    if (req.method !== 'POST') return { status: 404, body: '404 page not found' };
    if (req.body === undefined) return restError(400, "Couldn't process request - invalid request");
    const body = obj(req.body);
    const to = Array.isArray(body.recipients) ? body.recipients.map(String) : [];
    if (to.length === 0) return restError(400, "Couldn't process request - please provide at least one recipient");
    const number = typeof body.number === 'string' ? body.number : '';
    if (!number) return restError(400, "Couldn't process request - please provide a valid number");
    if (!accounts.has(number)) return restError(400, `User ${number} is not registered.`);

    const failure = ctx.takeFailure();
    if (failure) {
      return failureOutcome(failure, (kind) =>
        kind === 'rate_limit'
          ? restError(
              429,
              "Failed to send message due to rate limiting. Use the attached challenge tokens to lift the rate limit restrictions via the '/v1/accounts/{number}/rate-limit-challenge' endpoint.",
              { challenge_tokens: ['5f3c1e9a-challenge'], account: number },
            )
          : restError(400, 'Failed to send message: java.io.IOException: Connection timed out (chat.signal.org)'),
      );
    }

    for (const r of to) {
      if (r.startsWith('group.')) {
        if (!recipients.has(r)) return restError(400, 'Failed to send message: Invalid group id');
      } else if (!recipients.has(r)) {
        return restError(400, `Failed to send message: ${r}: Unregistered user`);
      }
    }
    const message = typeof body.message === 'string' ? body.message : '';
    const timestamp = String(clock++);
    for (const r of to) ctx.accept({ recipient: r, message, timestamp });
    return { status: 201, body: { timestamp } };
  });
}
