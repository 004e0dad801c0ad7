/**
 * GitHub webhooks (docs/senders.md, "GitHub"): signed `X-Hub-Signature-256` with a secret the user makes, the event
 * type in `X-GitHub-Event`, the delivery id `X-GitHub-Delivery`; `ping` is answered when the webhook is created.
 * A pull request's or an issue's events (comments and CI runs of a pull request too) share one session.
 */
import type { SenderPreset } from './sender.js';

const by = 'in {{repository.full_name}} by {{sender.login}}';
const repo = '{{repository.full_name}}';

export const github: SenderPreset = {
  name: 'github',
  title: 'GitHub',
  runName: 'GitHub',
  event: { header: 'x-github-event' },
  messages: {
    pull_request: [
      `GitHub pull request #{{pull_request.number}} {{action}} ${by}: {{pull_request.title}}`,
      'Branch {{pull_request.head.ref}} into {{pull_request.base.ref}}; state {{pull_request.state}}, draft {{pull_request.draft}}, merged {{pull_request.merged}}',
      '{{pull_request.html_url}}',
      '',
      '{{pull_request.body}}',
    ].join('\n'),
    issues: [
      `GitHub issue #{{issue.number}} {{action}} ${by}: {{issue.title}}`,
      'State {{issue.state}}, opened by {{issue.user.login}}',
      '{{issue.html_url}}',
      '',
      '{{issue.body}}',
    ].join('\n'),
    issue_comment: [
      `GitHub comment {{action}} on #{{issue.number}} ${by}: {{issue.title}}`,
      '{{comment.html_url}}',
      '',
      '{{comment.body}}',
    ].join('\n'),
    push: [
      `GitHub push to {{ref}} ${by}`,
      '{{before}} → {{after}}; created {{created}}, deleted {{deleted}}, forced {{forced}}',
      'Head commit: {{head_commit.message}}',
      '{{compare}}',
    ].join('\n'),
    release: [
      `GitHub release {{release.tag_name}} {{action}} ${by}: {{release.name}}`,
      'Prerelease {{release.prerelease}}, draft {{release.draft}}',
      '{{release.html_url}}',
      '',
      '{{release.body}}',
    ].join('\n'),
    workflow_run: [
      `GitHub workflow run {{workflow_run.name}} #{{workflow_run.run_number}} {{action}} ${by}: {{workflow_run.display_title}}`,
      'Status {{workflow_run.status}}, conclusion {{workflow_run.conclusion}}; branch {{workflow_run.head_branch}}, commit {{workflow_run.head_sha}}, triggered by {{workflow_run.event}}',
      '{{workflow_run.html_url}}',
    ].join('\n'),
    check_suite: [
      `GitHub check suite of {{check_suite.app.name}} {{action}} ${by}`,
      'Status {{check_suite.status}}, conclusion {{check_suite.conclusion}}; branch {{check_suite.head_branch}}, commit {{check_suite.head_sha}}',
      '{{repository.html_url}}/commit/{{check_suite.head_sha}}',
    ].join('\n'),
  },
  defaultMessage: [`GitHub {{headers.x-github-event}} event {{action}} ${by}`, '{{repository.html_url}}'].join('\n'),
  sessionKeys: {
    pull_request: [`${repo}#{{pull_request.number}}`],
    issues: [`${repo}#{{issue.number}}`],
    // A pull request's comments arrive as issue comments, numbered like the pull request: the same conversation.
    issue_comment: [`${repo}#{{issue.number}}`],
    // A branch's pushes and CI share `<repo>@refs/heads/<branch>`; CI of a pull request joins the pull request's.
    push: [`${repo}@{{ref}}`],
    workflow_run: [
      `${repo}#{{workflow_run.pull_requests[0].number}}`,
      `${repo}@refs/heads/{{workflow_run.head_branch}}`,
    ],
    check_suite: [`${repo}#{{check_suite.pull_requests[0].number}}`, `${repo}@refs/heads/{{check_suite.head_branch}}`],
    release: [`${repo}@refs/tags/{{release.tag_name}}`],
    '*': [repo, '{{organization.login}}'],
  },
  setup: {
    secret: 'generate',
    steps: [
      'On GitHub: the repository (or organisation) → Settings → Webhooks → Add webhook',
      'Payload URL: <url>',
      'Content type: application/json',
      'Secret: the secret from hookgate',
      'Which events: "Let me select individual events", and tick <events>',
      'Add webhook: GitHub sends a ping, which hookgate answers (a green tick under Recent Deliveries)',
    ],
  },
  sample: {
    headers: { 'content-type': 'application/json', 'x-github-event': 'issues' },
    body: {
      action: 'opened',
      issue: {
        number: 1347,
        title: 'Found a bug',
        state: 'open',
        html_url: 'https://github.com/octocat/Hello-World/issues/1347',
        user: { login: 'octocat' },
        body: "I'm having a problem with this.",
      },
      repository: { full_name: 'octocat/Hello-World', html_url: 'https://github.com/octocat/Hello-World' },
      sender: { login: 'octocat' },
    },
  },
};
