/**
 * The slack preset: one Request URL for slash commands (a form), the Events API (JSON) and Interactivity (a form
 * whose `payload` field is JSON), told apart by their event type; an empty 200 for the forms; a Slack channel as the
 * conversation, and the reply to it with `channel: "slack"`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actionOf, deliver, kit, runOf } from './kit.js';

const SLACK = { use: 'slack', secret: '8f742231b10e8888abcd99yyyzzz85a5' };
const FORM = { form: true, headers: { 'content-type': 'application/x-www-form-urlencoded' } };

/** A slash command as the ingress parses Slack's form: one string per field. */
const command = {
  token: 'gIkuvaNzQIHg97ATvDxqgjtO',
  team_id: 'T0001',
  team_domain: 'example',
  channel_id: 'C2147483705',
  channel_name: 'test',
  user_id: 'U2147483697',
  user_name: 'Steve',
  command: '/weather',
  text: '94070',
  response_url: 'https://hooks.slack.com/commands/1234/5678',
  trigger_id: '13345224609.738474920.8088930838d88f008e0',
};
const commandRaw = new URLSearchParams(command).toString();

const mention = (event: Record<string, unknown>) => ({
  token: 'XXYYZZ',
  team_id: 'T0001',
  api_app_id: 'A123456',
  type: 'event_callback',
  event_id: `Ev${Math.random().toString(36).slice(2)}`,
  event_time: 1515449522,
  event: {
    type: 'app_mention',
    user: 'U2147483697',
    text: '<@U0LAN0Z89> is the deploy done?',
    ts: '1515449522.000016',
    channel: 'C2147483705',
    ...event,
  },
});

const blockActions = {
  payload: {
    type: 'block_actions',
    user: { id: 'U2147483697', username: 'steve', name: 'steve' },
    team: { id: 'T0001', domain: 'example' },
    channel: { id: 'C2147483705', name: 'test' },
    message: { text: 'Deploy v2 to production?' },
    actions: [{ action_id: 'approve_deploy', block_id: 'b1', type: 'button', value: 'v2' }],
  },
};

describe('the slack preset', () => {
  it('a slash command (form): the words, the channel as the conversation, an empty 200', async () => {
    const k = kit({ presets: [SLACK] });
    const { result, action } = await actionOf(k, 'slack', command, { ...FORM, raw: commandRaw });
    assert.equal(result.senderAnswer, 'empty', 'Slack shows a body to the user');
    assert.equal(action.kind, 'agent');
    const run = (action as Extract<typeof action, { kind: 'agent' }>).run;
    assert.equal(
      run.message,
      'Slack: Steve (<@U2147483697>) ran /weather 94070\nIn #test (C2147483705), workspace example',
    );
    assert.equal(run.sessionKey, 'hook:slack:T0001/C2147483705');
    assert.equal(run.name, 'Slack');
  });

  it("Events API: app_mention in the channel's conversation, event_id the delivery id, a JSON answer", async () => {
    const k = kit({ presets: [SLACK] });
    const body = mention({});
    const { result } = await actionOf(k, 'slack', body);
    assert.equal(result.deliveryId, body.event_id);
    assert.equal(result.senderAnswer, undefined);
    const run = await runOf(k, 'slack', mention({}));
    assert.equal(
      run.message,
      'Slack: <@U2147483697> mentioned the app in channel C2147483705:\n<@U0LAN0Z89> is the deploy done?',
    );
    assert.equal(
      run.sessionKey,
      'hook:slack:T0001/C2147483705',
      'the same conversation as the slash command in that channel',
    );
  });

  it("a person's message is `message`; a bot's (the app's own reply) and a subtype are typed apart, so they do not match", async () => {
    const k = kit({ presets: [SLACK] });
    const dm = await runOf(
      k,
      'slack',
      mention({ type: 'message', channel_type: 'im', channel: 'D0001', text: 'hello' }),
    );
    assert.equal(dm.message, 'Slack: message from <@U2147483697> in im D0001:\nhello');
    assert.equal(
      (await deliver(k, 'slack', mention({ type: 'message', bot_id: 'B1', text: 'my own reply' }))).kind,
      'unauthorized',
    );
    assert.equal(
      (await deliver(k, 'slack', mention({ type: 'message', subtype: 'message_changed' }))).kind,
      'unauthorized',
    );
    const edits = kit({ presets: [{ ...SLACK, events: ['message_changed'] }] });
    assert.match(
      (await runOf(edits, 'slack', mention({ type: 'message', subtype: 'message_changed' }))).message,
      /^Slack event message/,
    );
  });

  it('Interactivity (form with a JSON payload field): who clicked what, on which message; an empty 200', async () => {
    const k = kit({ presets: [SLACK] });
    const raw = `payload=${encodeURIComponent(JSON.stringify(blockActions.payload))}`;
    const { result, action } = await actionOf(k, 'slack', blockActions, { ...FORM, raw });
    assert.equal(result.senderAnswer, 'empty');
    const run = (action as Extract<typeof action, { kind: 'agent' }>).run;
    assert.equal(
      run.message,
      'Slack: steve (<@U2147483697>) used approve_deploy (value v2) in channel test (C2147483705)\nOn the message: Deploy v2 to production?',
    );
    assert.equal(run.sessionKey, 'hook:slack:T0001/C2147483705');
  });

  it('with channel "slack" and no to, the reply goes to the Slack channel the request came from', async () => {
    const config = { channels: { slack: { botToken: 'xoxb-test-token' } } };
    const k = kit({ presets: [{ ...SLACK, channel: 'slack' }] }, config);
    assert.equal((await runOf(k, 'slack', command, { ...FORM, raw: commandRaw })).to, 'C2147483705');
    assert.equal((await runOf(k, 'slack', mention({ channel: 'C0002' }))).to, 'C0002');
    const raw = `payload=${encodeURIComponent(JSON.stringify(blockActions.payload))}`;
    assert.equal((await runOf(k, 'slack', blockActions, { ...FORM, raw })).to, 'C2147483705');
    const fixed = kit({ presets: [{ ...SLACK, channel: 'slack', to: 'C0OPS' }] }, config);
    assert.equal((await runOf(fixed, 'slack', mention({}))).to, 'C0OPS');
  });
});
