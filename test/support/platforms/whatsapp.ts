/**
 * A stand-in for the WhatsApp Cloud API (Graph API) send-message endpoint:
 * POST /{version}/{phone-number-id}/messages.
 * Checks what Graph checks: the version segment, the bearer token (190 invalid token), the phone number id
 * (100/33 unsupported post request), messaging_product, to, type and text.body present, body at most 4096
 * characters, the recipient allowed (131030, as for a test number's allow-list). Errors are Graph errors
 * { error: { message, type, code, error_subcode?, error_data?, fbtrace_id } }. The rate-limit answer is the
 * throughput error 130429, sent with HTTP 400 as Graph does; server_error is 131000 with HTTP 500.
 */
import { bearer, failureOutcome, obj, startStandIn, type Outcome, type Reply, type StandIn } from './base.js';

export const WHATSAPP_TEST_TOKEN = 'EAAGhookgateTestAccessTokenZDZD';
export const WHATSAPP_TEST_PHONE_NUMBER_ID = '106540352242922';

export interface WhatsAppMessage {
  to: string;
  body: string;
  id: string;
}

export interface WhatsAppStandInOptions {
  token?: string;
  phoneNumberId?: string;
  /** Recipients allowed (digits only); others get 131030. */
  recipients?: string[];
}

let trace = 0;
const graphError = (status: number, code: number, message: string, extra: object = {}): Reply => ({
  status,
  body: { error: { message, type: 'OAuthException', code, ...extra, fbtrace_id: `AbCdTrace${++trace}` } },
});

export async function startWhatsApp(options: WhatsAppStandInOptions = {}): Promise<StandIn<WhatsAppMessage>> {
  const token = options.token ?? WHATSAPP_TEST_TOKEN;
  const phoneNumberId = options.phoneNumberId ?? WHATSAPP_TEST_PHONE_NUMBER_ID;
  const recipients = new Set(options.recipients ?? ['15551234567', '4915112345678']);
  let seq = 1;

  return startStandIn<WhatsAppMessage>((req, ctx): Outcome => {
    const node = /^\/(v\d+\.\d+)\/([^/]+)$/.exec(req.path);
    if (node && req.method === 'GET') {
      // Reading the phone number node: { verified_name, code_verification_status, display_phone_number, quality_rating, id }.
      const presented = bearer(req.headers);
      if (!presented)
        return graphError(
          400,
          2500,
          'An active access token must be used to query information about the current user.',
        );
      if (presented !== token) return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token');
      const id = decodeURIComponent(node[2] ?? '');
      if (id !== phoneNumberId) {
        return graphError(
          400,
          100,
          `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
          { error_subcode: 33 },
        );
      }
      return {
        status: 200,
        body: {
          verified_name: 'Hookgate Test',
          code_verification_status: 'VERIFIED',
          display_phone_number: '+1 555-010-0000',
          quality_rating: 'GREEN',
          id,
        },
      };
    }
    const m = /^\/(v\d+\.\d+)\/([^/]+)\/messages$/.exec(req.path);
    if (!m) return graphError(400, 2500, `Unknown path components: ${req.path}`);
    if (req.method !== 'POST') return graphError(400, 100, 'Unsupported get request.');
    const presented = bearer(req.headers);
    if (!presented)
      return graphError(400, 2500, 'An active access token must be used to query information about the current user.');
    if (presented !== token) return graphError(401, 190, 'Invalid OAuth access token - Cannot parse access token');
    const id = decodeURIComponent(m[2] ?? '');
    if (id !== phoneNumberId) {
      return {
        ...graphError(
          400,
          100,
          `Unsupported post request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
          { error_subcode: 33 },
        ),
      };
    }

    const failure = ctx.takeFailure();
    if (failure) {
      return failureOutcome(failure, (kind) =>
        kind === 'rate_limit'
          ? graphError(400, 130429, '(#130429) Rate limit hit', {
              error_data: { messaging_product: 'whatsapp', details: 'Cloud API message throughput has been reached.' },
            })
          : graphError(500, 131000, '(#131000) Something went wrong', {
              error_data: { messaging_product: 'whatsapp', details: 'Something went wrong' },
            }),
      );
    }

    const body = obj(req.body);
    if (body.messaging_product !== 'whatsapp')
      return graphError(400, 100, '(#100) The parameter messaging_product is required.');
    if (typeof body.to !== 'string' || !body.to) return graphError(400, 100, '(#100) The parameter to is required.');
    if (body.type !== 'text')
      return graphError(400, 100, `(#100) Param type must be one of {...} - got "${String(body.type)}".`);
    const text = obj(body.text).body;
    if (typeof text !== 'string' || !text)
      return graphError(400, 100, "(#100) The parameter text['body'] is required.");
    if (text.length > 4096)
      return graphError(400, 100, "(#100) Param text['body'] must be at most 4096 characters long.");
    const digits = body.to.replace(/[^\d]/g, '');
    if (!recipients.has(digits)) {
      return graphError(400, 131030, '(#131030) Recipient phone number not in allowed list', {
        error_data: {
          messaging_product: 'whatsapp',
          details:
            'Recipient phone number not in allowed list: Add recipient phone number to recipient list and try again.',
        },
      });
    }

    const wamid = `wamid.HBgLMTU1NTEyMzQ1NjcVAgARGBI${seq++}`;
    ctx.accept({ to: digits, body: text, id: wamid });
    return {
      status: 200,
      body: { messaging_product: 'whatsapp', contacts: [{ input: body.to, wa_id: digits }], messages: [{ id: wamid }] },
    };
  });
}
