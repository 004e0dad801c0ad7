/**
 * Linear webhooks (docs/senders.md, "Linear"): `Linear-Signature` (HMAC-SHA256 of the body) with the signing secret
 * Linear shows, the signed body's `webhookTimestamp` within `toleranceSeconds`, the delivery id `Linear-Delivery`.
 * The event type is the payload's `type` and `action`: `Issue.create`, `Comment.update`, `Issue.*`… An issue's
 * events and its comments share one session.
 */
import type { SenderPreset } from './sender.js';

/** `<type>.<action>` (`Issue.create`), or the type alone for a payload without an action. */
function linearEvent(payload: Record<string, unknown>): string | undefined {
  const type = Object.hasOwn(payload, 'type') ? payload.type : undefined;
  const action = Object.hasOwn(payload, 'action') ? payload.action : undefined;
  if (typeof type !== 'string' || type === '') return undefined;
  return typeof action === 'string' && action !== '' ? `${type}.${action}` : type;
}

const issueState =
  'State {{data.state.name}}, priority {{data.priorityLabel}}, assignee {{data.assignee.name}}, team {{data.team.name}}';

export const linear: SenderPreset = {
  name: 'linear',
  title: 'Linear',
  runName: 'Linear',
  event: { read: linearEvent },
  messages: {
    'Issue.create': [
      'Linear issue {{data.identifier}} created by {{actor.name}}: {{data.title}}',
      issueState,
      '{{url}}',
      '',
      '{{data.description}}',
    ].join('\n'),
    'Issue.update': [
      'Linear issue {{data.identifier}} updated by {{actor.name}}: {{data.title}}',
      issueState,
      'Changed (previous values): {{updatedFrom}}',
      '{{url}}',
    ].join('\n'),
    'Issue.remove': ['Linear issue {{data.identifier}} removed by {{actor.name}}: {{data.title}}', '{{url}}'].join(
      '\n',
    ),
    'Comment.create': [
      'Linear comment by {{actor.name}} on {{data.issue.identifier}}: {{data.issue.title}}',
      '{{url}}',
      '',
      '{{data.body}}',
    ].join('\n'),
  },
  defaultMessage: ['Linear {{type}} {{action}} by {{actor.name}}', '{{url}}', 'Data: {{data}}'].join('\n'),
  sessionKeys: {
    // An issue is one conversation, its comments included (Linear's issue id; an identifier can change with its team).
    'Comment.create': ['{{data.issueId}}', '{{data.issue.id}}'],
    '*': ['{{data.issueId}}', '{{data.id}}'],
  },
  setup: {
    secret: 'sender',
    steps: [
      'In Linear: Settings → API → Webhooks → New webhook (workspace admins)',
      'URL: <url>',
      'Data change events: tick Issues and Comments (the event types <events>)',
      'Create webhook, then copy its signing secret (lin_wh_…) and give it to hookgate',
    ],
  },
  sample: {
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: {
      action: 'create',
      type: 'Issue',
      actor: { id: '2e6eea91-1111-0000-9486-acea0603064d', type: 'user', name: 'Linear User' },
      createdAt: '2020-01-23T12:53:18.084Z',
      data: {
        id: '539068e2-ae88-4d09-bd75-22eb4a59612f',
        identifier: 'LIN-1778',
        title: 'Foo bar',
        description: 'The deploy script fails on a fresh machine.',
        priorityLabel: 'High',
        state: { name: 'Todo' },
        team: { name: 'Engineering' },
      },
      url: 'https://linear.app/issue/LIN-1778/foo-bar',
      organizationId: '8f0a4c2b-0000-4a6c-9ff1-2e3c0a1b5d7e',
      webhookTimestamp: 1676056940508,
      webhookId: '000042e3-d123-4980-b49f-8e140eef9329',
    },
    sentAtField: 'webhookTimestamp',
  },
};
