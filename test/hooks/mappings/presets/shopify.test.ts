/**
 * The shopify preset over Shopify's documented `orders/create` example (test/fixtures/senders/shopify): the event type
 * is the `X-Shopify-Topic` header (families like `orders/*`), and an order is one conversation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { shopify } from '../../../../src/hooks/mappings/presets/shopify.js';
import { fixture } from '../../../support/sender-fixtures.js';
import { actionOf, deliver, kit, runOf } from './kit.js';

const k = kit({ presets: [{ use: 'shopify', secret: 'shpss_client_secret' }] });
const topic = (t: string) => ({ headers: { 'x-shopify-topic': t, 'x-shopify-shop-domain': 'jsmith.myshopify.com' } });

describe('the shopify preset', () => {
  it('words orders/create, orders/paid, orders/cancelled, orders/fulfilled, refunds/create, customers/create (the default events)', () => {
    assert.deepEqual(Object.keys(shopify.messages), [
      'orders/create',
      'orders/paid',
      'orders/cancelled',
      'orders/fulfilled',
      'refunds/create',
      'customers/create',
    ]);
  });

  it('an order placed: who bought what for how much, the admin link; X-Shopify-Webhook-Id is the delivery id', async () => {
    const order = fixture('shopify', 'orders-create');
    const { result, action } = await actionOf(k, 'shopify', order, topic('orders/create'));
    assert.match(String(result.deliveryId), /^[0-9a-f-]{36}$/);
    const r = (action as Extract<typeof action, { kind: 'agent' }>).run;
    assert.equal(
      r.message,
      [
        'Shopify order #9999 placed on jsmith.myshopify.com by John Smith <jon@example.com>',
        'Total 398.00 USD; financial status voided, fulfillment status pending',
        'First item: 1 × IPod Nano - 8GB (SKU IPOD2008PINK, 199.00 each)',
        `https://jsmith.myshopify.com/admin/orders/${order.id}`,
      ].join('\n'),
    );
    assert.equal(r.sessionKey, `hook:shopify:jsmith.myshopify.com/orders/${order.id}`);
    const refund = await runOf(
      k,
      'shopify',
      {
        id: 509562969,
        order_id: order.id,
        note: 'it broke during shipping',
        transactions: [{ amount: '41.94', currency: 'USD', status: 'success' }],
      },
      topic('refunds/create'),
    );
    assert.equal(refund.sessionKey, r.sessionKey, "a refund joins its order's conversation");
  });

  it('families: orders/* takes every order topic and nothing else', async () => {
    const orders = kit({ presets: [{ use: 'shopify', secret: 'shpss_client_secret', events: ['orders/*'] }] });
    assert.ok(
      (await runOf(orders, 'shopify', fixture('shopify', 'orders-create'), topic('orders/updated'))).message.startsWith(
        'Shopify orders/updated on jsmith.myshopify.com',
      ),
    );
    assert.equal((await deliver(orders, 'shopify', { id: 1 }, topic('products/update'))).kind, 'unauthorized');
    assert.equal(
      (await deliver(k, 'shopify', fixture('shopify', 'orders-create'), { ...topic('orders/create'), secret: 'other' }))
        .kind,
      'unauthorized',
    );
  });
});
