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
  warnings.push(...openClawGmailWarnings(config));
  if (!gmail.account) return { issues, warnings };
  const need = (key: 'audience' | 'serviceAccountEmail' | 'topic' | 'oauth', why: string) => {
    if (gmail[key] === undefined)
      issues.push({ path: `hooks.gmail.${key}`, message: `hooks.gmail.account requires hooks.gmail.${key} (${why})` });
  };
  need('audience', 'the push OIDC token must be checked against it');
  need('serviceAccountEmail', 'the push OIDC token must name it');
  need('topic', 'users.watch publishes to it');
  need('oauth', 'the Gmail API is read with it');
  if (gmail.topic && !gmail.topic.startsWith('projects/') && !gmail.project) {
    issues.push({
      path: 'hooks.gmail.topic',
      message: 'a bare topic name needs hooks.gmail.project (or write projects/<project>/topics/<name>)',
    });
  }
  if (gmail.pushPath === 'gmail') {
    issues.push({ path: 'hooks.gmail.pushPath', message: "may not be 'gmail': that is the gmail preset's own path" });
  }
  if (config.hooks.mappings.some((m) => m.match?.path === gmail.pushPath)) {
    warnings.push(
      `hooks.gmail.pushPath '${gmail.pushPath}' is also a mapping's match.path: the push receiver answers it, the mapping never runs`,
    );
  }
  if (!config.hooks.enabled)
    warnings.push('hooks.gmail.account is set but hooks.enabled is not true: no push is received');
  return { issues, warnings };
}

/** The topic's full name (`projects/<project>/topics/<name>`). */
export function gmailTopicName(gmail: {
  topic?: string | undefined;
  project?: string | undefined;
}): string | undefined {
  if (!gmail.topic) return undefined;
  return gmail.topic.startsWith('projects/') ? gmail.topic : `projects/${gmail.project}/topics/${gmail.topic}`;
}

/** What each key of OpenClaw's external watcher means here, and what to do instead: one warning per key set. */
const WATCHER_KEYS = {
  label: "use hooks.gmail.labels (a list) for hookgate's own chain",
  pushToken:
    "authenticates Pub/Sub to OpenClaw's watcher; hookgate's own chain checks the push's OIDC token instead (audience, serviceAccountEmail)",
  hookUrl: "the watcher posts to it: point it at this service's {hooks.path}/gmail",
  renewEveryMinutes: "use hooks.gmail.renewEveryHours for hookgate's own chain",
  serve:
    "the watcher's own listener: hookgate does not start gog; run `gog gmail watch serve` yourself, or switch to hookgate's chain (hookgate gmail setup)",
  tailscale:
    "exposes the watcher's listener: hookgate does not manage Tailscale; expose {hooks.path}/gmail-push yourself for hookgate's chain",
} as const;

/**
 * Warnings for a block written for OpenClaw: each watcher key hookgate does not read, and, when the block names the
 * watcher's mailbox (`watcherAccount`, see `gmailSchema`), that the external watcher must keep running.
 */
function openClawGmailWarnings(config: RawConfig): string[] {
  const gmail = config.hooks.gmail;
  const out: string[] = [];
  for (const [key, instead] of Object.entries(WATCHER_KEYS)) {
    if (gmail[key as keyof typeof WATCHER_KEYS] !== undefined) {
      out.push(
        `hooks.gmail.${key}: a key of OpenClaw's Gmail watcher, unused by hookgate: ${instead.replaceAll('{hooks.path}', config.hooks.path)}`,
      );
    }
  }
  if (gmail.watcherAccount !== undefined) {
    out.push(
      `hooks.gmail.account with OpenClaw's watcher keys and none of hookgate's chain (audience, serviceAccountEmail, oauth): ` +
        `hookgate does not watch the mailbox itself; the external watcher (gog gmail watch serve) must keep posting to ` +
        `${config.hooks.path}/gmail, which the gmail preset serves. For hookgate's own chain: hookgate gmail setup (docs/gmail.md)`,
    );
    if (!config.hooks.presets.includes('gmail') && !config.hooks.mappings.some((m) => m.match?.path === 'gmail')) {
      out.push(
        `hooks.gmail names a watcher mailbox but no mapping serves ${config.hooks.path}/gmail: add "gmail" to hooks.presets`,
      );
    }
  }
  return out;
}
