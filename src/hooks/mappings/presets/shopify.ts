/**
 * Shopify webhooks (docs/senders.md, "Shopify"): `X-Shopify-Hmac-Sha256` (base64 HMAC-SHA256 of the body) with the
 * app's client secret, the delivery id `X-Shopify-Webhook-Id`. The event type is the `X-Shopify-Topic` header
 * (`orders/create`, `orders/paid`…), the shop the `X-Shopify-Shop-Domain` header. An order is one session: its
 * creation, payment, fulfilment, cancellation and refunds.
 */
import type { SenderPreset } from './sender.js';

const shop = '{{headers.x-shopify-shop-domain}}';
const order = `https://${shop}/admin/orders/{{id}}`;
const buyer = '{{customer.first_name}} {{customer.last_name}} <{{email}}>';
const items =
  'First item: {{line_items[0].quantity}} × {{line_items[0].title}} (SKU {{line_items[0].sku}}, {{line_items[0].price}} each)';
const totals =
  'Total {{current_total_price}} {{currency}}; financial status {{financial_status}}, fulfillment status {{fulfillment_status}}';

export const shopify: SenderPreset = {
  name: 'shopify',
  title: 'Shopify',
  runName: 'Shopify',
  event: { header: 'x-shopify-topic' },
  messages: {
    'orders/create': [`Shopify order {{name}} placed on ${shop} by ${buyer}`, totals, items, order].join('\n'),
    'orders/paid': [`Shopify order {{name}} paid on ${shop} by ${buyer}`, totals, order].join('\n'),
    'orders/cancelled': [
      `Shopify order {{name}} cancelled on ${shop} (customer ${buyer}): reason {{cancel_reason}}, at {{cancelled_at}}`,
      totals,
      order,
    ].join('\n'),
    'orders/fulfilled': [`Shopify order {{name}} fulfilled on ${shop} (customer ${buyer})`, totals, order].join('\n'),
    'refunds/create': [
      `Shopify refund {{id}} on order {{order_id}} on ${shop}: note {{note}}`,
      'Refunded: {{transactions[0].amount}} {{transactions[0].currency}} ({{transactions[0].status}}); items {{refund_line_items}}',
      `https://${shop}/admin/orders/{{order_id}}`,
    ].join('\n'),
    'customers/create': [
      `Shopify customer created on ${shop}: {{first_name}} {{last_name}} <{{email}}>, phone {{phone}}`,
      'Marketing consent {{email_marketing_consent.state}}; note {{note}}',
      `https://${shop}/admin/customers/{{id}}`,
    ].join('\n'),
  },
  defaultMessage: [`Shopify {{headers.x-shopify-topic}} on ${shop}`, 'Data: {{payload}}'].join('\n'),
  sessionKeys: {
    'refunds/create': [`${shop}/orders/{{order_id}}`],
    'customers/create': [`${shop}/customers/{{id}}`],
    '*': [`${shop}/orders/{{id}}`, shop],
  },
  setup: {
    secret: 'sender',
    steps: [
      "In the Shopify Dev Dashboard (or Partner Dashboard): the app → Configuration (or the app's shopify.app.toml [webhooks])",
      'Add a subscription per topic, <events>, with the endpoint <url> (format JSON)',
      "Copy the app's client secret (Settings → Credentials) and give it to hookgate",
      "A store's own webhooks (Settings → Notifications → Webhooks) are signed with the key shown there instead",
    ],
  },
  sample: {
    headers: {
      'content-type': 'application/json',
      'x-shopify-topic': 'orders/create',
      'x-shopify-shop-domain': 'example.myshopify.com',
    },
    body: {
      id: 820982911946154500,
      name: '#9999',
      email: 'jon@example.com',
      currency: 'USD',
      current_total_price: '398.00',
      financial_status: 'voided',
      fulfillment_status: 'pending',
      customer: { id: 115310627314723950, first_name: 'John', last_name: 'Smith', email: 'john@example.com' },
      line_items: [{ quantity: 1, title: 'Aviator sunglasses', sku: 'SKU2006-001', price: '89.99' }],
    },
  },
};
