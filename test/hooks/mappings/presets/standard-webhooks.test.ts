/**
 * The standard-webhooks preset (Clerk, Resend, Svix…): every event type by default, one generic message with the
 * event's data, the `webhook-id` (or `svix-id`) as delivery id, a `data.id` as the conversation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actionOf, deliver, FRESH_KEY, kit, runOf } from './kit.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('the standard-webhooks preset', () => {
  it('takes every event type, words it generically, names the run after its path', async () => {
    const k = kit({ presets: [{ use: 'standard-webhooks', path: 'clerk', secret: SECRET }] });
    const body = {
      type: 'user.created',
      object: 'event',
      data: { id: 'user_29w83sxmDNGwOuEthce5gg56FcC', first_name: 'Ada' },
    };
    const { result, action } = await actionOf(k, 'clerk', body);
    assert.match(String(result.deliveryId), /^msg_/);
    const run = (action as Extract<typeof action, { kind: 'agent' }>).run;
    assert.equal(
      run.message,
      `clerk: user.created event (message ${result.deliveryId})\nData: {"id":"user_29w83sxmDNGwOuEthce5gg56FcC","first_name":"Ada"}`,
    );
    assert.equal(run.sessionKey, 'hook:clerk:user_29w83sxmDNGwOuEthce5gg56FcC');
    assert.equal(run.name, 'clerk');
    const resend = await runOf(k, 'clerk', {
      type: 'email.bounced',
      created_at: '2026-03-01T12:00:00Z',
      data: { email_id: 'e-1', to: ['x@example.com'] },
    });
    assert.match(resend.sessionKey, FRESH_KEY('clerk'), 'no data.id: a conversation of its own');
  });

  it('events narrow it; a payload without a type matches only "*"', async () => {
    const k = kit({
      presets: [{ use: 'standard-webhooks', path: 'resend', secret: SECRET, events: ['email.*'], name: 'Resend' }],
    });
    assert.equal((await runOf(k, 'resend', { type: 'email.delivered', data: { email_id: 'e-1' } })).name, 'Resend');
    assert.equal((await deliver(k, 'resend', { type: 'contact.created', data: {} })).kind, 'unauthorized');
    assert.equal((await deliver(k, 'resend', { data: {} })).kind, 'unauthorized');
  });
});
