/**
 * The linear preset over Linear's documented payloads (test/fixtures/senders/linear): the event type is `<type>.<action>`,
 * an issue and its comments share one conversation, and the signed `webhookTimestamp` must be fresh.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { linear } from '../../../../src/hooks/mappings/presets/linear.js';
import { fixture } from '../../../support/sender-fixtures.js';
import { actionOf, deliver, kit, NOW, runOf } from './kit.js';

const k = kit({ presets: [{ use: 'linear', secret: 'lin_wh_secret' }] });
const fresh = (name: string) => ({ ...fixture('linear', name), webhookTimestamp: NOW });
const ISSUE = '539068e2-ae88-4d09-bd75-22eb4a59612f';

describe('the linear preset', () => {
  it('words Issue.create, Issue.update, Issue.remove, Comment.create (the default events)', () => {
    assert.deepEqual(Object.keys(linear.messages), ['Issue.create', 'Issue.update', 'Issue.remove', 'Comment.create']);
  });

  it("an issue created: who, what, its state, the link; Linear-Delivery is the delivery id; a comment joins the issue's conversation", async () => {
    const { result, action } = await actionOf(k, 'linear', fresh('issue-create'));
    assert.match(String(result.deliveryId), /^[0-9a-f-]{36}$/);
    const r = (action as Extract<typeof action, { kind: 'agent' }>).run;
    assert.equal(
      r.message,
      [
        'Linear issue LIN-1778 created by Linear User: Foo bar',
        'State Todo, priority High, assignee Linear User, team Linear',
        'https://linear.app/issue/LIN-1778/foo-bar',
        '',
        'Steps to reproduce: run the deploy script on a fresh machine.',
      ].join('\n'),
    );
    assert.equal(r.sessionKey, `hook:linear:${ISSUE}`);
    const comment = await runOf(k, 'linear', fresh('comment-create'));
    assert.equal(
      comment.message,
      'Linear comment by Linear User on LIN-1778: Foo bar\nhttps://linear.app/issue/LIN-1778/foo-bar#comment-2174add1\n\nIndeed, I think this would be a great improvement.',
    );
    assert.equal(comment.sessionKey, `hook:linear:${ISSUE}`);
  });

  it("an update lists what changed; families take a type's every action", async () => {
    const update = {
      ...fresh('issue-create'),
      action: 'update',
      updatedFrom: { stateId: 'old-state', updatedAt: '2020-01-22T10:00:00.000Z' },
    };
    const r = await runOf(k, 'linear', update);
    assert.ok(
      r.message.includes('Changed (previous values): {"stateId":"old-state","updatedAt":"2020-01-22T10:00:00.000Z"}'),
      r.message,
    );
    const issues = kit({ presets: [{ use: 'linear', secret: 'lin_wh_secret', events: ['Issue.*'] }] });
    assert.ok(
      (await runOf(issues, 'linear', { ...fresh('issue-create'), action: 'remove' })).message.startsWith(
        'Linear issue LIN-1778 removed',
      ),
    );
    assert.equal((await deliver(issues, 'linear', fresh('comment-create'))).kind, 'unauthorized', 'not taken');
  });

  it('a stale webhookTimestamp, a wrong secret and an unmapped type are not taken', async () => {
    assert.equal(
      (await deliver(k, 'linear', { ...fresh('issue-create'), webhookTimestamp: NOW - 600_000 })).kind,
      'unauthorized',
    );
    assert.equal((await deliver(k, 'linear', fresh('issue-create'), { secret: 'other' })).kind, 'unauthorized');
    assert.equal((await deliver(k, 'linear', { ...fresh('issue-create'), type: 'Cycle' })).kind, 'unauthorized');
  });
});
