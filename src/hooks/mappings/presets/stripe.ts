/**
 * Stripe webhooks (docs/senders.md, "Stripe"): signed `Stripe-Signature` (timestamped) with the endpoint's signing
 * secret, which Stripe shows; the event type is the event's `type`, its `id` the delivery id. A customer's events
 * share one session (an object without a customer has its own).
 */
import type { SenderPreset } from './sender.js';

const o = 'data.object';
/** Every Stripe message ends with where it comes from and how to read its amounts. */
const footer = `Event {{id}}, live mode {{livemode}}. Amounts are in the currency's smallest unit (2000 usd = 20.00 USD).`;

export const stripe: SenderPreset = {
  name: 'stripe',
  title: 'Stripe',
  runName: 'Stripe',
  event: { field: 'type' },
  messages: {
    'payment_intent.succeeded': [
      `Stripe payment succeeded: {{${o}.amount_received}} {{${o}.currency}} from customer {{${o}.customer}}`,
      `Payment intent {{${o}.id}}: {{${o}.description}}`,
      `https://dashboard.stripe.com/payments/{{${o}.id}}`,
      footer,
    ].join('\n'),
    'payment_intent.payment_failed': [
      `Stripe payment failed: {{${o}.amount}} {{${o}.currency}} from customer {{${o}.customer}}`,
      `Reason: {{${o}.last_payment_error.message}} (code {{${o}.last_payment_error.code}}, decline code {{${o}.last_payment_error.decline_code}})`,
      `Payment intent {{${o}.id}}: {{${o}.description}}`,
      `https://dashboard.stripe.com/payments/{{${o}.id}}`,
      footer,
    ].join('\n'),
    'charge.refunded': [
      `Stripe charge refunded: {{${o}.amount_refunded}} of {{${o}.amount}} {{${o}.currency}} to customer {{${o}.customer}}`,
      `Charge {{${o}.id}}, payment intent {{${o}.payment_intent}}; receipt {{${o}.receipt_url}}`,
      `https://dashboard.stripe.com/payments/{{${o}.payment_intent}}`,
      footer,
    ].join('\n'),
    'charge.dispute.created': [
      `Stripe dispute opened: {{${o}.amount}} {{${o}.currency}} on charge {{${o}.charge}}, reason {{${o}.reason}}, status {{${o}.status}}`,
      `Evidence due by {{${o}.evidence_details.due_by}} (Unix time)`,
      `https://dashboard.stripe.com/disputes/{{${o}.id}}`,
      footer,
    ].join('\n'),
    'invoice.paid': [
      `Stripe invoice {{${o}.number}} paid: {{${o}.amount_paid}} {{${o}.currency}} by {{${o}.customer_email}} (customer {{${o}.customer}})`,
      `Invoice {{${o}.id}}, subscription {{${o}.subscription}}`,
      `{{${o}.hosted_invoice_url}}`,
      footer,
    ].join('\n'),
    'invoice.payment_failed': [
      `Stripe invoice {{${o}.number}} payment failed: {{${o}.amount_due}} {{${o}.currency}} due from {{${o}.customer_email}} (customer {{${o}.customer}})`,
      `Attempt {{${o}.attempt_count}}; next attempt at {{${o}.next_payment_attempt}} (Unix time)`,
      `{{${o}.hosted_invoice_url}}`,
      footer,
    ].join('\n'),
    'customer.subscription.created': [
      `Stripe subscription created for customer {{${o}.customer}}: status {{${o}.status}}`,
      `Price {{${o}.items.data[0].price.id}} ({{${o}.items.data[0].price.nickname}}): {{${o}.items.data[0].price.unit_amount}} {{${o}.items.data[0].price.currency}} per {{${o}.items.data[0].price.recurring.interval}}, quantity {{${o}.items.data[0].quantity}}`,
      `https://dashboard.stripe.com/subscriptions/{{${o}.id}}`,
      footer,
    ].join('\n'),
    'customer.subscription.updated': [
      `Stripe subscription updated for customer {{${o}.customer}}: status {{${o}.status}}, cancel at period end {{${o}.cancel_at_period_end}}`,
      `Price {{${o}.items.data[0].price.id}} ({{${o}.items.data[0].price.nickname}}), quantity {{${o}.items.data[0].quantity}}`,
      'Changed (previous values): {{data.previous_attributes}}',
      `https://dashboard.stripe.com/subscriptions/{{${o}.id}}`,
      footer,
    ].join('\n'),
    'customer.subscription.deleted': [
      `Stripe subscription ended for customer {{${o}.customer}}: status {{${o}.status}}, reason {{${o}.cancellation_details.reason}}`,
      `Feedback: {{${o}.cancellation_details.feedback}} {{${o}.cancellation_details.comment}}`,
      `https://dashboard.stripe.com/subscriptions/{{${o}.id}}`,
      footer,
    ].join('\n'),
    'checkout.session.completed': [
      `Stripe checkout completed: {{${o}.amount_total}} {{${o}.currency}} from {{${o}.customer_details.name}} <{{${o}.customer_details.email}}>`,
      `Payment status {{${o}.payment_status}}, mode {{${o}.mode}}; customer {{${o}.customer}}, payment intent {{${o}.payment_intent}}, subscription {{${o}.subscription}}`,
      `Checkout session {{${o}.id}}`,
      footer,
    ].join('\n'),
  },
  defaultMessage: [
    `Stripe {{type}} for {{${o}.object}} {{${o}.id}} (customer {{${o}.customer}})`,
    `Object: {{${o}}}`,
    footer,
  ].join('\n'),
  sessionKeys: { '*': [`{{${o}.customer}}`, `{{${o}.id}}`] },
  setup: {
    secret: 'sender',
    steps: [
      'In the Stripe Dashboard: Developers → Webhooks → Add endpoint (Workbench: Webhooks → Create an event destination)',
      'Endpoint URL: <url>',
      'Select events: <events>',
      'Add endpoint, then "Reveal" the signing secret (whsec_…) and give it to hookgate',
      'For local testing: stripe listen --forward-to <url> prints a signing secret of its own',
    ],
  },
  sample: {
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: {
      id: 'evt_3MtwBwLkdIwHu7ix0Q1c2X8Y',
      object: 'event',
      type: 'payment_intent.succeeded',
      livemode: false,
      created: 1680064028,
      data: {
        object: {
          id: 'pi_3MtwBwLkdIwHu7ix28a3tqPa',
          object: 'payment_intent',
          amount: 2000,
          amount_received: 2000,
          currency: 'usd',
          customer: 'cus_NffrFeUfNV2Hib',
          description: 'Order 1042',
          status: 'succeeded',
        },
      },
    },
  },
};
