/**
 * The twilio preset over Twilio's documented request parameters (test/fixtures/senders/twilio), posted as the form
 * Twilio sends and signed over the entry's `url`: the event type is the kind of request, a remote number is one
 * conversation, and a form is answered with an empty TwiML document.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { describe, it } from 'node:test';
import { twilioSignature } from '../../../../src/hooks/mappings/signature-twilio.js';
import { withoutCredentials } from '../../../../src/ingress/auth.js';
import type { HookAction } from '../../../../src/hooks/dispatch.js';
import type { RouteResult } from '../../../../src/hooks/routes.js';
import { fixture } from '../../../support/sender-fixtures.js';
import { kit, NOW } from './kit.js';

const URL_ = 'https://hooks.example.com/hooks/twilio';
const TOKEN = 'twilio-auth-token-0123456789abcdef';
const k = kit({ presets: [{ use: 'twilio', secret: TOKEN, url: URL_ }] });

/** A form post as Twilio makes it: the fields urlencoded, signed over the URL and the sorted fields. */
function post(fields: Record<string, string>, token = TOKEN): Promise<RouteResult> {
  const raw = Buffer.from(new URLSearchParams(fields).toString());
  const headers: IncomingHttpHeaders = {
    'content-type': 'application/x-www-form-urlencoded',
    'x-twilio-signature': twilioSignature(token, URL_, Object.entries(fields)),
    'i-twilio-idempotency-token': 'b6f4ce0e-6e3d-4b10-8d8b-1cf1b1c9d5f1',
  };
  return k.routes.resolve({
    ctx: k.ctx,
    subPath: 'twilio',
    payload: { ...fields },
    rawBody: raw,
    headers: withoutCredentials(headers),
    rawHeaders: headers,
    query: new URLSearchParams(),
    now: NOW,
    tokenVerified: false,
    form: true,
  });
}

const runIn = (r: RouteResult) => {
  assert.equal(r.kind, 'actions', JSON.stringify(r));
  const a = (r as Extract<RouteResult, { kind: 'actions' }>).actions[0] as Extract<HookAction, { kind: 'agent' }>;
  return a.run;
};

describe('the twilio preset', () => {
  it('an incoming SMS: who wrote what to which number; answered with TwiML; the idempotency token is the delivery id', async () => {
    const r = await post(fixture('twilio', 'incoming-sms') as Record<string, string>);
    assert.equal((r as Extract<RouteResult, { kind: 'actions' }>).senderAnswer, 'twiml');
    assert.equal((r as Extract<RouteResult, { kind: 'actions' }>).deliveryId, 'b6f4ce0e-6e3d-4b10-8d8b-1cf1b1c9d5f1');
    const run = runIn(r);
    assert.equal(
      run.message,
      [
        'Twilio message from +15551234567 to +15557654321:',
        'Hello from Twilio',
        '',
        'Media attached: 0 ',
        'Message SM1f0e8ae6ade43cb3c0ce4525424e404f, account ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
      ].join('\n'),
    );
    assert.equal(run.sessionKey, 'hook:twilio:ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX/+15551234567');
  });

  it("a call's status callback; an incoming call is not taken; a wrong token is refused", async () => {
    const status = runIn(await post(fixture('twilio', 'call-status') as Record<string, string>));
    assert.equal(
      status.message,
      'Twilio call CA42ed11f93dc08b952027ffbc406d0868 from +15551234567 to +15557654321 (outbound-api): completed\nDuration 14 s, at Mon, 04 Mar 2024 19:21:13 +0000; account ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
    );
    const {
      CallbackSource: _,
      SequenceNumber: __,
      ...incoming
    } = fixture('twilio', 'call-status') as Record<string, string>;
    // Not taken (answered 200 with TwiML by the server: the e2e test; here, without the path verifier's verdict, refused).
    assert.equal((await post({ ...incoming, CallStatus: 'ringing' })).kind, 'unauthorized');
    assert.equal(
      (await post(fixture('twilio', 'incoming-sms') as Record<string, string>, 'another-token')).kind,
      'unauthorized',
    );
  });
});
