/**
 * The github preset's wording and session keys, over GitHub's own example payloads (@octokit/webhooks-examples):
 * every example of every event type it words renders a message naming who, what, where and the link, in the
 * conversation of its pull request, issue, branch or tag.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { github } from '../../../../src/hooks/mappings/presets/github.js';
import { kit, runOf } from './kit.js';
import { type OctokitExample, openedPullRequestMessage } from '../../../support/sender-messages.js';

const definitions = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];
// Their own shapes differ per event; the tests read them as plain JSON.
type Example = OctokitExample;
const examples = (event: string): Example[] => {
  const d = definitions.find((x) => x.name === event);
  assert.ok(d, `no examples of ${event}`);
  return d.examples as unknown as Example[];
};

const k = kit({ presets: [{ use: 'github', secret: 'gh-secret' }] });
const run = (event: string, payload: Example) => runOf(k, 'github', payload, { headers: { 'x-github-event': event } });

describe('the github preset', () => {
  it('words pull_request, issues, issue_comment, push, release, workflow_run, check_suite (the default events)', () => {
    assert.deepEqual(Object.keys(github.messages), [
      'pull_request',
      'issues',
      'issue_comment',
      'push',
      'release',
      'workflow_run',
      'check_suite',
    ]);
  });

  it('every example of every worded event renders a full message in the github namespace', async () => {
    for (const event of Object.keys(github.messages)) {
      for (const [i, payload] of examples(event).entries()) {
        const r = await run(event, payload);
        assert.ok(r.message.startsWith('GitHub '), `${event}[${i}]: ${r.message}`);
        assert.ok(r.message.includes(payload.repository.full_name as string), `${event}[${i}] names the repository`);
        assert.match(r.message, /https:\/\/github\.com\//, `${event}[${i}] links to GitHub`);
        assert.ok(
          r.sessionKey.startsWith(`hook:github:${payload.repository.full_name}`),
          `${event}[${i}]: ${r.sessionKey}`,
        );
      }
    }
  });

  it('pull_request: who, what, where, the link and the description; one conversation per pull request', async () => {
    const pr = examples('pull_request').find((e) => e.action === 'opened')!;
    const r = await run('pull_request', pr);
    assert.equal(r.message, openedPullRequestMessage(pr));
    assert.equal(r.sessionKey, `hook:github:${pr.repository.full_name}#${pr.number}`);
  });

  it("issues and issue comments share the issue's conversation (a pull request's comments, the pull request's)", async () => {
    const opened = examples('issues').find((e) => e.action === 'opened')!;
    const comment =
      examples('issue_comment').find((e) => e.action === 'created' && e.issue.number === opened.issue.number) ??
      examples('issue_comment')[0]!;
    const a = await run('issues', opened);
    const b = await run('issue_comment', comment);
    assert.equal(a.sessionKey, `hook:github:${opened.repository.full_name}#${opened.issue.number}`);
    assert.equal(b.sessionKey, `hook:github:${comment.repository.full_name}#${comment.issue.number}`);
    assert.match(
      a.message,
      new RegExp(`^GitHub issue #${opened.issue.number} opened in .+ by ${opened.sender.login}: `),
    );
    assert.ok(a.message.includes(opened.issue.html_url as string));
    assert.ok(b.message.includes(comment.comment.body as string), 'the comment itself');
    assert.ok(b.message.includes(comment.comment.html_url as string));
  });

  it("CI joins its pull request's conversation, else its branch's, which a push to that branch shares", async () => {
    const suite = examples('check_suite').find((e) => e.check_suite.pull_requests.length > 0)!;
    assert.equal(
      (await run('check_suite', suite)).sessionKey,
      `hook:github:${suite.repository.full_name}#${suite.check_suite.pull_requests[0].number}`,
    );
    const wf = examples('workflow_run').find((e) => e.workflow_run.pull_requests.length === 0)!;
    const r = await run('workflow_run', wf);
    assert.equal(r.sessionKey, `hook:github:${wf.repository.full_name}@refs/heads/${wf.workflow_run.head_branch}`);
    assert.ok(r.message.includes(wf.workflow_run.html_url as string));
    const push = await run('push', {
      ...examples('push')[0]!,
      ref: `refs/heads/${wf.workflow_run.head_branch}`,
      repository: wf.repository,
    });
    assert.equal(push.sessionKey, r.sessionKey);
  });

  it('a release is in the conversation of its tag', async () => {
    const rel = examples('release').find((e) => e.action === 'published')!;
    const r = await run('release', rel);
    assert.equal(r.sessionKey, `hook:github:${rel.repository.full_name}@refs/tags/${rel.release.tag_name}`);
    assert.ok(r.message.includes(rel.release.html_url as string));
  });
});
