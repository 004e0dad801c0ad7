import type { RawConfig } from '../schema/index.js';
import type { ConfigFindings } from './types.js';

/**
 * `hooks.gmail` with `account` set is the whole push chain (docs/gmail.md): it needs the push's identity to check
 * (`audience`, `serviceAccountEmail`), a topic to watch, and OAuth credentials to read the mailbox. Without
 * `account` the section only tunes the `gmail` preset (an external watcher posting to `{hooks.path}/gmail`).
 */
export function checkGmail(config: RawConfig): ConfigFindings {
  const gmail = config.hooks.gmail;
  const issues: ConfigFindings['issues'] = [];
  const warnings: string[] = [];
  const legacy = (['label', 'pushToken', 'hookUrl', 'renewEveryMinutes'] as const).filter((k) => gmail[k] !== undefined);
  if (legacy.length) {
    warnings.push(`hooks.gmail.${legacy.join(', ')}: keys of OpenClaw's external Gmail watcher, unused by hookgate (see docs/gmail.md: labels, renewEveryHours)`);
  }
  if (!gmail.account) return { issues, warnings };
  const need = (key: 'audience' | 'serviceAccountEmail' | 'topic' | 'oauth', why: string) => {
    if (gmail[key] === undefined) issues.push({ path: `hooks.gmail.${key}`, message: `hooks.gmail.account requires hooks.gmail.${key} (${why})` });
  };
  need('audience', 'the push OIDC token must be checked against it');
  need('serviceAccountEmail', 'the push OIDC token must name it');
  need('topic', 'users.watch publishes to it');
  need('oauth', 'the Gmail API is read with it');
  if (gmail.topic && !gmail.topic.startsWith('projects/') && !gmail.project) {
    issues.push({ path: 'hooks.gmail.topic', message: 'a bare topic name needs hooks.gmail.project (or write projects/<project>/topics/<name>)' });
  }
  if (gmail.pushPath === 'gmail') {
    issues.push({ path: 'hooks.gmail.pushPath', message: "may not be 'gmail': that is the gmail preset's own path" });
  }
  if (config.hooks.mappings.some((m) => m.match?.path === gmail.pushPath)) {
    warnings.push(`hooks.gmail.pushPath '${gmail.pushPath}' is also a mapping's match.path: the push receiver answers it, the mapping never runs`);
  }
  if (!config.hooks.enabled) warnings.push('hooks.gmail.account is set but hooks.enabled is not true: no push is received');
  return { issues, warnings };
}

/** The topic's full name (`projects/<project>/topics/<name>`). */
export function gmailTopicName(gmail: { topic?: string | undefined; project?: string | undefined }): string | undefined {
  if (!gmail.topic) return undefined;
  return gmail.topic.startsWith('projects/') ? gmail.topic : `projects/${gmail.project}/topics/${gmail.topic}`;
}
