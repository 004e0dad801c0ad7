/**
 * The stripe preset: the event type is the event's `type`, its `id` the delivery id; a message per common event
 * type that names the amount, the customer and a link; a customer's events in one conversation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stripe } from '../../../../src/hooks/mappings/presets/stripe.js';
import { actionOf, kit, runOf } from './kit.js';

const k = kit({ presets: [{ use: 'stripe', secret: 'whsec_test_secret' }] });
const event = (type: string, object: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id: `evt_${type.replace(/\W/g, '')}`,
  object: 'event',
  type,
  livemode: false,
  data: { object, ...extra },
});

describe('the stripe preset', () => {
  it('words the common event types (its default events)', () => {
    assert.deepEqual(Object.keys(stripe.messages), [
      'payment_intent.succeeded',
      'payment_intent.payment_failed',
      'charge.refunded',
      'charge.dispute.created',
      'invoice.paid',
      'invoice.payment_failed',
      'customer.subscription.created',
      'customer.subscription.updated',
      'customer.subscription.deleted',
      'checkout.session.completed',
    ]);
  });

  it('payment_intent.succeeded: amount, customer, the link, how to read amounts; the event id is the delivery id', async () => {
    const body = event('payment_intent.succeeded', {
      id: 'pi_1',
      object: 'payment_intent',
      amount: 2000,
      amount_received: 2000,
      currency: 'usd',
      customer: 'cus_A',
      description: 'Order 1042',
    });
    const { result } = await actionOf(k, 'stripe', body);
    assert.equal(result.deliveryId, body.id);
    const run = await runOf(k, 'stripe', body);
    assert.equal(
      run.message,
      [
        'Stripe payment succeeded: 2000 usd from customer cus_A',
        'Payment intent pi_1: Order 1042',
        'https://dashboard.stripe.com/payments/pi_1',
        "Event evt_payment_intentsucceeded, live mode false. Amounts are in the currency's smallest unit (2000 usd = 20.00 USD).",
      ].join('\n'),
    );
    assert.equal(run.sessionKey, 'hook:stripe:cus_A');
    assert.equal(run.name, 'Stripe');
  });

  it("the other worded events say what happened to whom; a customer's events share a conversation", async () => {
    const cases: Array<[string, Record<string, unknown>, RegExp, Record<string, unknown>?]> = [
      [
        'payment_intent.payment_failed',
        {
          id: 'pi_2',
          amount: 500,
          currency: 'eur',
          customer: 'cus_A',
          last_payment_error: {
            message: 'Your card was declined.',
            code: 'card_declined',
            decline_code: 'insufficient_funds',
          },
        },
        /^Stripe payment failed: 500 eur from customer cus_A\nReason: Your card was declined\. \(code card_declined, decline code insufficient_funds\)/,
      ],
      [
        'charge.refunded',
        {
          id: 'ch_1',
          amount: 2000,
          amount_refunded: 500,
          currency: 'usd',
          customer: 'cus_A',
          payment_intent: 'pi_1',
          receipt_url: 'https://pay.stripe.com/receipts/r1',
        },
        /^Stripe charge refunded: 500 of 2000 usd to customer cus_A\n.*receipt https:\/\/pay\.stripe\.com\/receipts\/r1/,
      ],
      [
        'invoice.paid',
        {
          id: 'in_1',
          number: 'ACME-0042',
          amount_paid: 1200,
          currency: 'eur',
          customer: 'cus_A',
          customer_email: 'ada@example.com',
          hosted_invoice_url: 'https://invoice.stripe.com/i/1',
        },
        /^Stripe invoice ACME-0042 paid: 1200 eur by ada@example\.com \(customer cus_A\)[\s\S]*https:\/\/invoice\.stripe\.com\/i\/1/,
      ],
      [
        'invoice.payment_failed',
        {
          id: 'in_2',
          number: 'ACME-0043',
          amount_due: 1200,
          currency: 'eur',
          customer: 'cus_A',
          customer_email: 'ada@example.com',
          attempt_count: 2,
        },
        /^Stripe invoice ACME-0043 payment failed: 1200 eur due from ada@example\.com \(customer cus_A\)\nAttempt 2/,
      ],
      [
        'customer.subscription.created',
        {
          id: 'sub_1',
          customer: 'cus_A',
          status: 'active',
          items: {
            data: [
              {
                quantity: 1,
                price: {
                  id: 'price_1',
                  nickname: 'Pro',
                  unit_amount: 900,
                  currency: 'usd',
                  recurring: { interval: 'month' },
                },
              },
            ],
          },
        },
        /^Stripe subscription created for customer cus_A: status active\nPrice price_1 \(Pro\): 900 usd per month, quantity 1/,
      ],
      [
        'customer.subscription.updated',
        { id: 'sub_1', customer: 'cus_A', status: 'past_due', cancel_at_period_end: false, items: { data: [] } },
        /^Stripe subscription updated for customer cus_A: status past_due[\s\S]*Changed \(previous values\): \{"status":"active"\}/,
        { previous_attributes: { status: 'active' } },
      ],
      [
        'customer.subscription.deleted',
        {
          id: 'sub_1',
          customer: 'cus_A',
          status: 'canceled',
          cancellation_details: { reason: 'cancellation_requested' },
        },
        /^Stripe subscription ended for customer cus_A: status canceled, reason cancellation_requested/,
      ],
      [
        'checkout.session.completed',
        {
          id: 'cs_1',
          amount_total: 4200,
          currency: 'usd',
          customer: 'cus_A',
          customer_details: { name: 'Ada', email: 'ada@example.com' },
          payment_status: 'paid',
          mode: 'payment',
        },
        /^Stripe checkout completed: 4200 usd from Ada <ada@example\.com>\nPayment status paid, mode payment/,
      ],
    ];
    for (const [type, object, words, extra] of cases) {
      const run = await runOf(k, 'stripe', event(type, object, extra));
      assert.match(run.message, words, type);
      assert.equal(run.sessionKey, 'hook:stripe:cus_A', type);
    }
  });

  it("a dispute (no customer on it) is its own object's conversation", async () => {
    const run = await runOf(
      k,
      'stripe',
      event('charge.dispute.created', {
        id: 'dp_1',
        amount: 2000,
        currency: 'usd',
        charge: 'ch_1',
        reason: 'fraudulent',
        status: 'needs_response',
        evidence_details: { due_by: 1700000000 },
      }),
    );
    assert.match(
      run.message,
      /^Stripe dispute opened: 2000 usd on charge ch_1, reason fraudulent, status needs_response\nEvidence due by 1700000000 \(Unix time\)\nhttps:\/\/dashboard\.stripe\.com\/disputes\/dp_1/,
    );
    assert.equal(run.sessionKey, 'hook:stripe:dp_1');
  });
});
