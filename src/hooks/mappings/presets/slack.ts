/**
 * A Slack app (docs/senders.md, "Slack"): slash commands (a form), the Events API (JSON, `url_verification` answered
 * with its challenge, `event_id` the delivery id) and Interactivity (a form whose `payload` field is JSON), all
 * signed `X-Slack-Signature` with the app's signing secret and all on one Request URL. A Slack channel is one
 * conversation; with `channel: "slack"` and no `to`, the reply goes to the Slack channel the request came from.
 */
import type { SenderPreset } from './sender.js';

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A slash command is `slash_command`; an Events API event its `event.type`, except a message with a subtype, typed by
 * its subtype (`message_changed`, `bot_message`…), and a bot's message, `bot_message`: `message` is a person's
 * message, so an app that replies in a channel it listens to does not answer itself. Interactivity: its `type`.
 */
function slackEvent(payload: Record<string, unknown>): string | undefined {
  if (typeof payload.command === 'string') return 'slash_command';
  if (payload.type === 'event_callback' && isRecord(payload.event)) {
    const e = payload.event;
    if (typeof e.type !== 'string' || e.type === '') return undefined;
    if (e.type !== 'message') return e.type;
    if (typeof e.subtype === 'string' && e.subtype !== '') return e.subtype;
    return e.bot_id !== undefined ? 'bot_message' : 'message';
  }
  if (isRecord(payload.payload) && typeof payload.payload.type === 'string' && payload.payload.type !== '')
    return payload.payload.type;
  return undefined;
}

/** Interactivity's fields, under the form's decoded `payload` field. */
const i = 'payload.payload';

export const slack: SenderPreset = {
  name: 'slack',
  title: 'Slack',
  runName: 'Slack',
  event: { read: slackEvent },
  messages: {
    slash_command: [
      'Slack: {{user_name}} (<@{{user_id}}>) ran {{command}} {{text}}',
      'In #{{channel_name}} ({{channel_id}}), workspace {{team_domain}}',
    ].join('\n'),
    app_mention: ['Slack: <@{{event.user}}> mentioned the app in channel {{event.channel}}:', '{{event.text}}'].join(
      '\n',
    ),
    message: [
      'Slack: message from <@{{event.user}}> in {{event.channel_type}} {{event.channel}}:',
      '{{event.text}}',
    ].join('\n'),
    block_actions: [
      `Slack: {{${i}.user.name}} (<@{{${i}.user.id}}>) used {{${i}.actions[0].action_id}} (value {{${i}.actions[0].value}}) in channel {{${i}.channel.name}} ({{${i}.channel.id}})`,
      `On the message: {{${i}.message.text}}`,
    ].join('\n'),
    view_submission: [
      `Slack: {{${i}.user.name}} (<@{{${i}.user.id}}>) submitted the form {{${i}.view.callback_id}} ({{${i}.view.title.text}})`,
      `Values: {{${i}.view.state.values}}`,
    ].join('\n'),
    shortcut: `Slack: {{${i}.user.username}} (<@{{${i}.user.id}}>) used the shortcut {{${i}.callback_id}}`,
    message_action: [
      `Slack: {{${i}.user.name}} (<@{{${i}.user.id}}>) used the message shortcut {{${i}.callback_id}} in channel {{${i}.channel.name}} ({{${i}.channel.id}}) on:`,
      `{{${i}.message.text}}`,
    ].join('\n'),
  },
  defaultMessage: ['Slack event {{event.type}}{{payload.payload.type}}', '{{event}}{{payload.payload}}'].join('\n'),
  sessionKeys: {
    slash_command: ['{{team_id}}/{{channel_id}}'],
    '*': [
      '{{team_id}}/{{event.channel}}',
      `{{${i}.team.id}}/{{${i}.channel.id}}`,
      `{{${i}.team.id}}/{{${i}.user.id}}`,
      '{{team_id}}',
    ],
  },
  reply: { channel: 'slack', to: ['{{channel_id}}', '{{event.channel}}', `{{${i}.channel.id}}`] },
  setup: {
    secret: 'sender',
    steps: [
      'At api.slack.com/apps: Create New App → From scratch, pick the workspace',
      'Basic Information → App Credentials → Signing Secret → Show, and give it to hookgate',
      'Slash Commands → Create New Command: Request URL <url>',
      'Event Subscriptions → Enable Events: Request URL <url> (Slack shows "Verified"), subscribe to the bot events <events>',
      'Interactivity & Shortcuts → On: Request URL <url>',
      'Install App → Install to Workspace (again after each change of scopes or commands)',
    ],
  },
  sample: {
    headers: { 'content-type': 'application/json' },
    body: {
      token: 'XXYYZZ',
      team_id: 'T0001',
      api_app_id: 'A123456',
      event: {
        type: 'app_mention',
        user: 'U2147483697',
        text: '<@U0LAN0Z89> is the deploy done?',
        ts: '1515449522.000016',
        channel: 'C2147483705',
      },
      type: 'event_callback',
      event_id: 'Ev0PV52K25',
      event_time: 1515449522,
    },
  },
};
