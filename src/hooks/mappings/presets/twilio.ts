/**
 * Twilio webhooks (docs/senders.md, "Twilio"): `X-Twilio-Signature` over the public URL Twilio calls (the entry's
 * `url`) and the form's fields, with the account's auth token; the delivery id `I-Twilio-Idempotency-Token`. The event
 * type is the kind of request, read from its fields: an incoming SMS, MMS or WhatsApp message (`message`), a status
 * callback of a message sent (`message_status`) or of a call (`call_status`), an incoming call (`call`). A form from
 * Twilio is answered with an empty TwiML `<Response/>` (no reply message): the agent's reply goes out through a
 * channel. A remote number is one session.
 */
import type { SenderPreset } from './sender.js';

const has = (payload: Record<string, unknown>, key: string) =>
  Object.hasOwn(payload, key) && typeof payload[key] === 'string' && payload[key] !== '';

function twilioEvent(payload: Record<string, unknown>): string | undefined {
  if (has(payload, 'MessageStatus')) return 'message_status';
  if (has(payload, 'MessageSid') || has(payload, 'SmsMessageSid')) return 'message';
  // A call's status callbacks say where they come from; the request a call makes when it comes in does not.
  if (has(payload, 'CallSid')) return has(payload, 'CallbackSource') ? 'call_status' : 'call';
  return undefined;
}

export const twilio: SenderPreset = {
  name: 'twilio',
  title: 'Twilio',
  runName: 'Twilio',
  event: { read: twilioEvent },
  messages: {
    message: [
      'Twilio message from {{From}} to {{To}}:',
      '{{Body}}',
      '',
      'Media attached: {{NumMedia}} {{MediaUrl0}}',
      'Message {{MessageSid}}, account {{AccountSid}}',
    ].join('\n'),
    message_status: [
      'Twilio message {{MessageSid}} from {{From}} to {{To}}: {{MessageStatus}}',
      'Error code: {{ErrorCode}}',
    ].join('\n'),
    call_status: [
      'Twilio call {{CallSid}} from {{From}} to {{To}} ({{Direction}}): {{CallStatus}}',
      'Duration {{CallDuration}} s, at {{Timestamp}}; account {{AccountSid}}',
    ].join('\n'),
  },
  defaultMessage: ['Twilio request from {{From}} to {{To}}', 'Fields: {{payload}}'].join('\n'),
  sessionKeys: {
    // The remote party: who wrote in, who a message was sent to; a call is its own conversation.
    message: ['{{AccountSid}}/{{From}}'],
    message_status: ['{{AccountSid}}/{{To}}'],
    call_status: ['{{AccountSid}}/{{CallSid}}'],
    '*': ['{{AccountSid}}/{{From}}'],
  },
  setup: {
    secret: 'sender',
    steps: [
      'In the Twilio Console: Account → API keys & tokens → Auth Token (the live one), and give it to hookgate',
      'Phone Numbers → Manage → Active numbers → the number → Messaging Configuration: "A message comes in": Webhook <url>, HTTP POST',
      '(WhatsApp: Messaging → Senders, or the Sandbox settings: "When a message comes in": <url>)',
      "hookgate's url option must be <url> exactly as entered there: Twilio signs that URL",
    ],
  },
  // Twilio's fields as JSON: a test send posts JSON, which Twilio's signature covers through `?bodySHA256=` (signedQuery).
  sample: {
    headers: { 'content-type': 'application/json' },
    body: {
      ToCountry: 'US',
      ToState: 'CA',
      SmsMessageSid: 'SM1f0e8ae6ade43cb3c0ce4525424e404f',
      NumMedia: '0',
      ToCity: '',
      FromZip: '',
      SmsSid: 'SM1f0e8ae6ade43cb3c0ce4525424e404f',
      FromState: 'CA',
      SmsStatus: 'received',
      FromCity: 'SAN FRANCISCO',
      Body: 'Hello from Twilio',
      FromCountry: 'US',
      To: '+15557654321',
      ToZip: '',
      NumSegments: '1',
      MessageSid: 'SM1f0e8ae6ade43cb3c0ce4525424e404f',
      AccountSid: 'ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
      From: '+15551234567',
      ApiVersion: '2010-04-01',
    },
  },
};
