/**
 * Standard Webhooks senders (docs/senders.md, "Standard Webhooks"): Clerk, Resend and the other senders built on Svix
 * or the Standard Webhooks specification. Signed `webhook-signature` (or `svix-signature`), timestamped, with the
 * `whsec_` secret the sender shows; `webhook-id` is the delivery id; the event type is the payload's `type`. One
 * generic message for every event type, with the event's data as JSON; a `data.id` is one conversation.
 */
import type { SenderPreset } from './sender.js';

export const standardWebhooks: SenderPreset = {
  name: 'standard-webhooks',
  title: 'Standard Webhooks (Clerk, Resend, Svix…)',
  runName: '{{path}}',
  event: { field: 'type' },
  messages: {},
  defaultEvents: ['*'],
  defaultMessage: [
    '{{path}}: {{type}} event (message {{headers.webhook-id}}{{headers.svix-id}})',
    'Data: {{data}}',
  ].join('\n'),
  sessionKeys: { '*': ['{{data.id}}'] },
  setup: {
    secret: 'sender',
    steps: [
      "In the sender's dashboard, its webhooks page (Clerk: Configure → Webhooks; Resend: Webhooks): Add endpoint",
      'Endpoint URL: <url>',
      'Subscribe to the events <events>',
      "Copy the endpoint's signing secret (whsec_…) and give it to hookgate",
    ],
  },
  sample: {
    headers: { 'content-type': 'application/json' },
    body: {
      type: 'user.created',
      object: 'event',
      timestamp: 1654012591835,
      data: {
        id: 'user_29w83sxmDNGwOuEthce5gg56FcC',
        first_name: 'Example',
        last_name: 'Example',
        email_addresses: [{ email_address: 'example@example.org' }],
      },
    },
  },
};
