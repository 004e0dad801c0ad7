/**
 * Sentry's integration platform (docs/senders.md, "Sentry"): `Sentry-Hook-Signature` (HMAC-SHA256 of the body) with
 * the integration's client secret, `Sentry-Hook-Timestamp` within `toleranceSeconds`, the delivery id `Request-ID`.
 * The event type is the `Sentry-Hook-Resource` header (`issue`, `error`, `event_alert`, `metric_alert`, `comment`,
 * `installation`…); the payload's `action` says what happened to it. A Sentry issue is one session: its events,
 * errors, alerts and comments.
 */
import type { SenderPreset } from './sender.js';

const issue = 'data.issue';

export const sentry: SenderPreset = {
  name: 'sentry',
  title: 'Sentry',
  runName: 'Sentry',
  event: { header: 'sentry-hook-resource' },
  messages: {
    issue: [
      `Sentry issue {{${issue}.shortId}} {{action}} in project {{${issue}.project.slug}} (by {{actor.name}}): {{${issue}.title}}`,
      `Level {{${issue}.level}}, status {{${issue}.status}} {{${issue}.substatus}}; culprit {{${issue}.culprit}}; first seen {{${issue}.firstSeen}}, {{${issue}.count}} events`,
      `{{${issue}.web_url}}`,
    ].join('\n'),
    error: [
      'Sentry error {{action}}: {{data.error.title}}',
      'Level {{data.error.level}}, culprit {{data.error.culprit}}, environment {{data.error.environment}}, release {{data.error.release}}',
      '{{data.error.web_url}}',
    ].join('\n'),
    event_alert: [
      'Sentry alert "{{data.triggered_rule}}" {{action}}: {{data.event.title}}',
      'Level {{data.event.level}}, culprit {{data.event.culprit}}, environment {{data.event.environment}}, release {{data.event.release}}',
      '{{data.event.web_url}}',
    ].join('\n'),
    metric_alert: [
      'Sentry metric alert {{action}}: {{data.description_title}}',
      '{{data.description_text}}',
      '{{data.web_url}}',
    ].join('\n'),
    comment: [
      'Sentry comment {{action}} by {{actor.name}} on issue {{data.issue_id}} in project {{data.project_slug}}',
      '',
      '{{data.comment}}',
    ].join('\n'),
  },
  defaultMessage: ['Sentry {{headers.sentry-hook-resource}} {{action}} (by {{actor.name}})', 'Data: {{data}}'].join(
    '\n',
  ),
  sessionKeys: {
    issue: [`{{${issue}.id}}`],
    error: ['{{data.error.issue_id}}'],
    event_alert: ['{{data.event.issue_id}}'],
    metric_alert: ['metric-alert/{{data.metric_alert.alert_rule.id}}', 'metric-alert/{{data.metric_alert.id}}'],
    comment: ['{{data.issue_id}}'],
    '*': ['{{installation.uuid}}'],
  },
  setup: {
    secret: 'sender',
    steps: [
      'In Sentry: Settings → Developer Settings → Custom Integrations → Create New Integration → Internal Integration',
      'Webhook URL: <url>',
      'Alert Rule Action: on (for event_alert and metric_alert: then pick the integration in an alert rule)',
      'Permissions: Issue & Event → Read; Webhooks: tick <events>',
      'Save Changes, then copy the Client Secret (under Credentials) and give it to hookgate',
    ],
  },
  sample: {
    headers: { 'content-type': 'application/json', 'sentry-hook-resource': 'issue' },
    body: {
      action: 'created',
      installation: { uuid: 'a8e5d37a-696c-4c54-adb5-b3f28d64c7de' },
      data: {
        issue: {
          id: '1170820242',
          shortId: 'FRONT-END-9',
          title: 'Error: Cannot read property of undefined',
          culprit: 'app/components/Checkout',
          level: 'error',
          status: 'unresolved',
          project: { slug: 'front-end' },
          web_url: 'https://sentry.io/organizations/acme/issues/1170820242/',
        },
      },
      actor: { type: 'application', id: 'sentry', name: 'Sentry' },
    },
  },
};
