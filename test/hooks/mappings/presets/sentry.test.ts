/**
 * The sentry preset over Sentry's documented payloads (test/fixtures/senders/sentry): the event type is the
 * `Sentry-Hook-Resource` header, and a Sentry issue's events (created, alerts, comments) share one conversation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sentry } from '../../../../src/hooks/mappings/presets/sentry.js';
import { fixture } from '../../../support/sender-fixtures.js';
import { actionOf, deliver, kit, NOW, runOf } from './kit.js';

const k = kit({ presets: [{ use: 'sentry', secret: 'sentry-client-secret' }] });
const as = (resource: string) => ({ headers: { 'sentry-hook-resource': resource } });

describe('the sentry preset', () => {
  it('words issue, error, event_alert, metric_alert, comment (the default events)', () => {
    assert.deepEqual(Object.keys(sentry.messages), ['issue', 'error', 'event_alert', 'metric_alert', 'comment']);
  });

  it('an issue created: what, where, the link; Request-ID is the delivery id; its alert shares the conversation', async () => {
    const { result, action } = await actionOf(k, 'sentry', fixture('sentry', 'issue-created'), as('issue'));
    assert.match(String(result.deliveryId), /^[0-9a-f-]{36}$/);
    const r = (action as Extract<typeof action, { kind: 'agent' }>).run;
    assert.equal(
      r.message,
      [
        'Sentry issue FRONT-END-9 created in project front-end (by Sentry): Error: Loading chunk 3 failed.',
        'Level error, status unresolved new; culprit ?(runtime); first seen 2019-08-19T20:58:37.391000Z, 1 events',
        'https://sentry.io/organizations/example/issues/1170820242/',
      ].join('\n'),
    );
    assert.equal(r.sessionKey, 'hook:sentry:1170820242');
    const alert = await runOf(k, 'sentry', fixture('sentry', 'event-alert'), as('event_alert'));
    assert.equal(
      alert.message,
      [
        'Sentry alert "Send a notification for new issues" triggered: Error: Loading chunk 3 failed.',
        'Level error, culprit ?(runtime), environment production, release frontend@1.4.0',
        'https://sentry.io/organizations/example/issues/1170820242/events/a8e5d37a696c4c54adb5b3f28d64c7de/',
      ].join('\n'),
    );
    assert.equal(alert.sessionKey, 'hook:sentry:1170820242');
  });

  it('a stale Sentry-Hook-Timestamp, a wrong secret and an installation event are not taken', async () => {
    const issue = fixture('sentry', 'issue-created');
    assert.equal((await deliver(k, 'sentry', issue, { ...as('issue'), now: NOW - 600_000 })).kind, 'unauthorized');
    assert.equal((await deliver(k, 'sentry', issue, { ...as('issue'), secret: 'other' })).kind, 'unauthorized');
    assert.equal(
      (await deliver(k, 'sentry', { action: 'created', installation: { uuid: 'x' } }, as('installation'))).kind,
      'unauthorized',
    );
  });
});
