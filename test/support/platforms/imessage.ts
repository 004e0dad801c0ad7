/**
 * A stand-in for a BlueBubbles server's POST /api/v1/message/text.
 * Checks what BlueBubbles checks: the password in the query (`password`, or its aliases `guid` / `token`),
 * chatGuid required, method apple-script | private-api, with apple-script a tempGuid and a message required,
 * a tempGuid still being sent refused ("already queued"), the chat known to Messages.app. Answers in BlueBubbles'
 * envelope: { status, message, data } on success, { status, message, error: { type, message } } on failure;
 * a send that Messages.app cannot complete is a 500 "iMessage Error".
 * BlueBubbles has no rate limiting of its own: `rate_limit` answers like `server_error` (Apple throttling shows up
 * as a failed send).
 */
import { randomUUID } from 'node:crypto';
import { failureOutcome, obj, startStandIn, type Outcome, type Reply, type StandIn } from './base.js';

export const BLUEBUBBLES_TEST_PASSWORD = 'bb-pass/with?odd&chars';

export interface IMessageMessage {
  chatGuid: string;
  text: string;
  tempGuid: string;
  method: string;
  guid: string;
}

export interface IMessageStandIn extends StandIn<IMessageMessage> {
  /** Pretend a send with this tempGuid is still in progress (BlueBubbles' send cache). */
  markInFlight(tempGuid: string): void;
}

export interface IMessageStandInOptions {
  password?: string;
  chats?: string[];
}

const bbError = (status: number, message: string, type: string, detail: string): Reply => ({
  status,
  body: { status, message, error: { type, message: detail } },
});

export async function startIMessage(options: IMessageStandInOptions = {}): Promise<IMessageStandIn> {
  const password = options.password ?? BLUEBUBBLES_TEST_PASSWORD;
  const chats = new Set(
    options.chats ?? ['iMessage;-;+15551234567', 'iMessage;-;friend@icloud.com', 'iMessage;+;chat123456789'],
  );
  const inFlight = new Set<string>();

  const base = await startStandIn<IMessageMessage>((req, ctx): Outcome => {
    if (req.path === '/api/v1/server/info' && req.method === 'GET') {
      if ((req.query.get('password') ?? req.query.get('guid') ?? req.query.get('token')) !== password) {
        return bbError(401, 'You are not authorized to access this resource', 'Authentication Error', 'Unauthorized');
      }
      return {
        status: 200,
        body: {
          status: 200,
          message: 'Successfully fetched server info',
          data: {
            computer_id: 'hookgate-mac',
            os_version: '14.5',
            server_version: '1.9.9',
            private_api: false,
            proxy_service: 'Cloudflare',
            helper_connected: false,
            detected_icloud: 'test@icloud.com',
          },
        },
      };
    }
    if (req.path !== '/api/v1/message/text' || req.method !== 'POST') {
      return bbError(404, 'The requested resource was not found', 'Database Error', 'Route not found');
    }
    const presented = req.query.get('password') ?? req.query.get('guid') ?? req.query.get('token');
    if (presented !== password) {
      return bbError(401, 'You are not authorized to access this resource', 'Authentication Error', 'Unauthorized');
    }
    const badRequest = (detail: string) =>
      bbError(400, "You've made a bad request! Please check your request params & body", 'Validation Error', detail);
    const body = obj(req.body);
    const chatGuid = body.chatGuid;
    const method = body.method ?? 'apple-script';
    if (typeof chatGuid !== 'string' || !chatGuid) return badRequest('The chatGuid field is required.');
    if (method !== 'apple-script' && method !== 'private-api') return badRequest('The selected method is invalid.');
    const tempGuid = typeof body.tempGuid === 'string' ? body.tempGuid : '';
    const text = typeof body.message === 'string' ? body.message : '';
    if (method === 'apple-script' && !tempGuid)
      return badRequest("A 'tempGuid' is required when sending via AppleScript");
    if (!text)
      return badRequest(
        `A 'message' is required when sending via ${method === 'apple-script' ? 'AppleScript' : 'the Private API'}`,
      );
    if (tempGuid && inFlight.has(tempGuid))
      return badRequest(`Message is already queued to be sent! (Temp GUID: ${tempGuid})`);

    const failure = ctx.takeFailure();
    if (failure) {
      return failureOutcome(failure, () =>
        bbError(
          500,
          'Message Send Error',
          'iMessage Error',
          'Failed to send message! See attached message error code.',
        ),
      );
    }
    if (!chats.has(chatGuid)) {
      return bbError(500, 'Message Send Error', 'iMessage Error', `Chat does not exist: ${chatGuid}`);
    }

    const guid = randomUUID().toUpperCase();
    ctx.accept({ chatGuid, text, tempGuid, method, guid });
    return {
      status: 200,
      body: {
        status: 200,
        message: 'Message sent!',
        data: { guid, tempGuid, text, isFromMe: true, dateCreated: Date.now(), chats: [{ guid: chatGuid }] },
      },
    };
  });
  return Object.assign(base, { markInFlight: (g: string) => void inFlight.add(g) });
}
