/** A payload of `@octokit/webhooks-examples`: read by path, as the preset's templates do. */
export type OctokitExample = Record<string, any>;

/** What the github preset (src/hooks/mappings/presets/github.ts) words for an opened, not-draft, unmerged pull request. */
export function openedPullRequestMessage(pr: OctokitExample): string {
  return [
    `GitHub pull request #${pr.number} opened in ${pr.repository.full_name} by ${pr.sender.login}: ${pr.pull_request.title}`,
    `Branch ${pr.pull_request.head.ref} into ${pr.pull_request.base.ref}; state open, draft false, merged false`,
    pr.pull_request.html_url,
    '',
    pr.pull_request.body,
  ].join('\n');
}
