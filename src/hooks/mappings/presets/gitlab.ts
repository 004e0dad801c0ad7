/**
 * GitLab webhooks (docs/senders.md, "GitLab"): `X-Gitlab-Token`, a secret the user makes (sent as it is, compared in
 * constant time), the delivery id `X-Gitlab-Event-UUID` (or `Idempotency-Key`). The event type is the payload's
 * `object_kind` (`merge_request`, `issue`, `note`, `push`, `pipeline`…: what `X-Gitlab-Event` says as "Merge Request
 * Hook", "Issue Hook"…), else its `event_name` (system hooks). A merge request's or an issue's events (its comments,
 * a merge request's pipelines) share one session.
 */
import type { SenderPreset } from './sender.js';

/** `object_kind`, else `event_name` (a system hook's). */
function gitlabEvent(payload: Record<string, unknown>): string | undefined {
  for (const key of ['object_kind', 'event_name']) {
    const v = Object.hasOwn(payload, key) ? payload[key] : undefined;
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

const p = '{{project.path_with_namespace}}';
const a = 'object_attributes';

export const gitlab: SenderPreset = {
  name: 'gitlab',
  title: 'GitLab',
  runName: 'GitLab',
  event: { read: gitlabEvent },
  messages: {
    merge_request: [
      `GitLab merge request !{{${a}.iid}} {{${a}.action}} in ${p} by {{user.username}}: {{${a}.title}}`,
      `Branch {{${a}.source_branch}} into {{${a}.target_branch}}; state {{${a}.state}}, draft {{${a}.draft}}, merge status {{${a}.detailed_merge_status}}`,
      `{{${a}.url}}`,
      '',
      `{{${a}.description}}`,
    ].join('\n'),
    issue: [
      `GitLab issue #{{${a}.iid}} {{${a}.action}} in ${p} by {{user.username}}: {{${a}.title}}`,
      `State {{${a}.state}}, confidential {{${a}.confidential}}`,
      `{{${a}.url}}`,
      '',
      `{{${a}.description}}`,
    ].join('\n'),
    note: [
      `GitLab comment by {{user.username}} on a {{${a}.noteable_type}} in ${p}: {{merge_request.title}}{{issue.title}}{{snippet.title}}{{commit.title}}`,
      `{{${a}.url}}`,
      '',
      `{{${a}.note}}`,
    ].join('\n'),
    push: [
      `GitLab push to {{ref}} in ${p} by {{user_username}} ({{user_name}}): {{total_commits_count}} commits`,
      '{{before}} → {{after}}',
      '{{project.web_url}}/-/compare/{{before}}...{{after}}',
    ].join('\n'),
    pipeline: [
      `GitLab pipeline #{{${a}.id}} {{${a}.status}} in ${p} on {{${a}.ref}}, started by {{user.username}}`,
      `Source {{${a}.source}}, commit {{${a}.sha}}, {{${a}.duration}} s; merge request {{merge_request.url}}`,
      `{{project.web_url}}/-/pipelines/{{${a}.id}}`,
    ].join('\n'),
  },
  defaultMessage: [
    'GitLab {{object_kind}}{{event_name}} event in {{project.path_with_namespace}} by {{user.username}}{{user_username}}',
    '{{project.web_url}}',
  ].join('\n'),
  sessionKeys: {
    // `!` a merge request, `#` an issue (GitLab's own notation): its comments and a merge request's pipelines join it.
    merge_request: [`${p}!{{${a}.iid}}`],
    issue: [`${p}#{{${a}.iid}}`],
    note: [`${p}!{{merge_request.iid}}`, `${p}#{{issue.iid}}`, p],
    push: [`${p}@{{ref}}`],
    pipeline: [`${p}!{{merge_request.iid}}`, `${p}@refs/heads/{{${a}.ref}}`],
    '*': [p],
  },
  setup: {
    secret: 'generate',
    steps: [
      'In GitLab: the project (or group) → Settings → Webhooks → Add new webhook',
      'URL: <url>',
      'Secret token: the secret from hookgate',
      'Trigger: tick <events> (Merge request events, Issues events, Comments, Push events, Pipeline events)',
      'Add webhook, then Test → Merge request events: hookgate answers 200',
    ],
  },
  sample: {
    headers: { 'content-type': 'application/json', 'x-gitlab-event': 'Issue Hook' },
    body: {
      object_kind: 'issue',
      event_type: 'issue',
      user: { name: 'Administrator', username: 'root' },
      project: { path_with_namespace: 'gitlabhq/gitlab-test', web_url: 'http://example.com/gitlabhq/gitlab-test' },
      object_attributes: {
        iid: 23,
        title: 'New API: create/update/delete file',
        description: 'Create new API for manipulations with repository',
        state: 'opened',
        confidential: false,
        action: 'open',
        url: 'http://example.com/diaspora/issues/23',
      },
    },
  },
};
