/**
 * The gitlab preset over GitLab's documented example payloads (test/fixtures/senders/gitlab): the event type is the
 * payload's `object_kind`, each worded one names who, what, where and the link, and a merge request's comments and
 * pipelines share its conversation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gitlab } from '../../../../src/hooks/mappings/presets/gitlab.js';
import { fixture } from '../../../support/sender-fixtures.js';
import { actionOf, deliver, kit, runOf } from './kit.js';

const k = kit({ presets: [{ use: 'gitlab', secret: 'gl-secret' }] });
const HOOK: Record<string, string> = {
  merge_request: 'Merge Request Hook',
  issue: 'Issue Hook',
  note: 'Note Hook',
  push: 'Push Hook',
  pipeline: 'Pipeline Hook',
};
const run = (payload: Record<string, unknown>) =>
  runOf(k, 'gitlab', payload, { headers: { 'x-gitlab-event': HOOK[payload.object_kind as string] ?? 'System Hook' } });

describe('the gitlab preset', () => {
  it('words merge_request, issue, note, push, pipeline (the default events)', () => {
    assert.deepEqual(Object.keys(gitlab.messages), ['merge_request', 'issue', 'note', 'push', 'pipeline']);
  });

  it('a merge request opened: who, what, where, the link; the X-Gitlab-Event-UUID is the delivery id', async () => {
    const mr = fixture('gitlab', 'merge-request');
    const { result, action } = await actionOf(k, 'gitlab', mr, { headers: { 'x-gitlab-event': 'Merge Request Hook' } });
    assert.match(String(result.deliveryId), /^[0-9a-f-]{36}$/);
    const r = (action as Extract<typeof action, { kind: 'agent' }>).run;
    assert.equal(
      r.message,
      [
        'GitLab merge request !1 open in gitlabhq/gitlab-test by root: MS-Viewport',
        'Branch ms-viewport into master; state opened, draft false, merge status mergeable',
        'http://example.com/diaspora/merge_requests/1',
      ].join('\n'),
    );
    assert.equal(r.sessionKey, 'hook:gitlab:gitlabhq/gitlab-test!1');
    assert.equal(r.name, 'GitLab');
  });

  it('an issue, a comment on a merge request, a push and a pipeline', async () => {
    const issue = await run(fixture('gitlab', 'issue'));
    assert.equal(
      issue.message.split('\n')[0],
      'GitLab issue #23 open in gitlabhq/gitlab-test by root: New API: create/update/delete file',
    );
    assert.ok(
      issue.message.endsWith(
        'http://example.com/diaspora/issues/23\n\nCreate new API for manipulations with repository',
      ),
    );
    assert.equal(issue.sessionKey, 'hook:gitlab:gitlabhq/gitlab-test#23');

    const note = await run(fixture('gitlab', 'note-merge-request'));
    assert.equal(
      note.message,
      [
        'GitLab comment by root on a MergeRequest in gitlab-org/gitlab-test: Tempora et eos debitis quae laborum et.',
        'http://example.com/gitlab-org/gitlab-test/merge_requests/1#note_1244',
        '',
        'This MR needs work.',
      ].join('\n'),
    );
    assert.equal(note.sessionKey, 'hook:gitlab:gitlab-org/gitlab-test!1', "the merge request's conversation");

    const push = await run(fixture('gitlab', 'push'));
    assert.equal(
      push.message,
      [
        'GitLab push to refs/heads/master in mike/diaspora by jsmith (John Smith): 4 commits',
        '95790bf891e76fee5e1747ab589903a6a1f80f22 → da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
        'http://example.com/mike/diaspora/-/compare/95790bf891e76fee5e1747ab589903a6a1f80f22...da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
      ].join('\n'),
    );
    assert.equal(push.sessionKey, 'hook:gitlab:mike/diaspora@refs/heads/master');

    const pipeline = await run(fixture('gitlab', 'pipeline'));
    assert.equal(
      pipeline.message.split('\n')[0],
      'GitLab pipeline #31 success in gitlab-org/gitlab-test on master, started by root',
    );
    assert.ok(pipeline.message.endsWith('http://example.com/gitlab-org/gitlab-test/-/pipelines/31'));
    assert.equal(
      pipeline.sessionKey,
      'hook:gitlab:gitlab-org/gitlab-test!1',
      "a merge request's pipeline joins its conversation",
    );
  });

  it('an event type outside events is not taken; events narrow it', async () => {
    const wiki = { object_kind: 'wiki_page', user: { username: 'root' }, project: { path_with_namespace: 'a/b' } };
    assert.equal(
      (await deliver(k, 'gitlab', wiki, { headers: { 'x-gitlab-event': 'Wiki Page Hook' } })).kind,
      'unauthorized',
    );
    const narrow = kit({ presets: [{ use: 'gitlab', secret: 'gl-secret', events: ['merge_request'] }] });
    assert.equal((await deliver(narrow, 'gitlab', fixture('gitlab', 'push'))).kind, 'unauthorized');
    assert.equal(
      (await runOf(narrow, 'gitlab', fixture('gitlab', 'merge-request'))).sessionKey,
      'hook:gitlab:gitlabhq/gitlab-test!1',
    );
  });

  it('a wrong token is refused', async () => {
    const r = await deliver(k, 'gitlab', fixture('gitlab', 'issue'), { secret: 'not-the-token' });
    assert.equal(r.kind, 'unauthorized');
  });
});
