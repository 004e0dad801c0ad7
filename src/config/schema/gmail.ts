// `hooks.gmail`: Google's push chain, and the block an OpenClaw config carries for its external watcher.
import { z } from 'zod';
import { httpUrl, nonBlank, positiveInt } from './common.js';
import { normalizeMatchPath } from '../client.js';

/** Google's endpoints: `hooks.gmail.*Url` point them at a proxy or a local stand-in (tests). */
export const GMAIL_API_BASE_URL = 'https://gmail.googleapis.com';
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
export const GOOGLE_JWKS_URL = 'https://www.googleapis.com/oauth2/v3/certs';

/**
 * `hooks.gmail`: the Gmail push chain (docs/gmail.md). With `account` set, hookgate receives Pub/Sub's push at
 * `{hooks.path}/{pushPath}` (authenticated by the push's OIDC token), fetches the new mail through the Gmail API and
 * runs it through the `gmail` preset, and keeps the mailbox's watch renewed. `hookgate gmail setup` writes it.
 */
const gmailFields = z.strictObject({
  /** The mailbox (`me` of the OAuth grant), e.g. `alice@example.com`. Setting it turns the chain on. */
  account: nonBlank.optional(),
  /** Google Cloud project of the topic and subscription. */
  project: nonBlank.optional(),
  /** Pub/Sub topic Gmail publishes to: `projects/<project>/topics/<name>`, or the bare name (with `project`). */
  topic: nonBlank.optional(),
  /** The push subscription (shown by `gmail status`, managed by `gmail setup`). */
  subscription: nonBlank.optional(),
  /** Sub-path of `hooks.path` the push subscription posts to. */
  pushPath: z
    .string()
    .transform(normalizeMatchPath)
    .refine((p) => p !== '' && p !== 'wake' && p !== 'agent', 'must be a sub-path other than wake and agent')
    .default('gmail-push'),
  /** The push endpoint's OIDC audience (the subscription's `pushConfig.oidcToken.audience`). */
  audience: nonBlank.optional(),
  /** The push subscription's service account: the token's `email` must be it. */
  serviceAccountEmail: nonBlank.optional(),
  /** Labels watched and fetched. */
  labels: z.array(nonBlank).min(1).default(['INBOX']),
  /** Put the mail's text in `messages[].body` (false: snippet only). */
  includeBody: z.boolean().default(true),
  /** Body text is cut at this many characters. */
  maxBodyChars: positiveInt.default(20000),
  /** An OAuth client and a refresh token of the mailbox (scope gmail.readonly or gmail.modify); secret forms allowed. */
  oauth: z.strictObject({ clientId: nonBlank, clientSecret: nonBlank, refreshToken: nonBlank }).optional(),
  /** `users.watch` again this often (a watch lapses after 7 days). */
  renewEveryHours: z.number().positive().lt(168, 'a watch lapses after 7 days (168 h): renew more often').default(24),
  gmailApiBaseUrl: httpUrl.default(GMAIL_API_BASE_URL),
  tokenUrl: httpUrl.default(GOOGLE_TOKEN_URL),
  jwksUrl: httpUrl.default(GOOGLE_JWKS_URL),
  /** Keys of OpenClaw's external watcher (`gog gmail watch serve`): accepted so such configs validate, unused (a warning). */
  label: z.string().optional(),
  pushToken: z.string().optional(),
  hookUrl: z.string().optional(),
  renewEveryMinutes: positiveInt.optional(),
  /** OpenClaw's watcher's own listener and its Tailscale exposure (`gog gmail watch serve`): unused (a warning). */
  serve: z.record(z.string(), z.unknown()).optional(),
  tailscale: z.record(z.string(), z.unknown()).optional(),
  /** The mailbox of OpenClaw's external watcher, when the block is OpenClaw's (see `gmailSchema`); never set by hand. */
  watcherAccount: z.never().optional(),
  /** Per-message body cap of an external watcher posting to `{hooks.path}/gmail`; sizes that path's body allowance. */
  maxBytes: positiveInt.default(20000),
  allowUnsafeExternalContent: z.boolean().optional(),
  model: nonBlank.optional(),
  thinking: nonBlank.optional(),
});

/** Keys only OpenClaw's external watcher has, and keys only hookgate's own push chain has. */
const WATCHER_ONLY = ['pushToken', 'hookUrl', 'serve', 'tailscale', 'label', 'renewEveryMinutes'] as const;
const CHAIN_ONLY = ['audience', 'serviceAccountEmail', 'oauth', 'project'] as const;

/**
 * A block written for OpenClaw (`account` with its watcher's keys, none of the chain's) names the mailbox an external
 * `gog gmail watch serve` watches: hookgate's own chain stays off (`account` is kept as `watcherAccount`, and the
 * check says so) and the watcher's posts to `{hooks.path}/gmail` are served by the preset, so the block validates.
 */
export const gmailSchema = gmailFields.transform((g) => {
  const openclaw =
    g.account !== undefined &&
    WATCHER_ONLY.some((k) => g[k] !== undefined) &&
    CHAIN_ONLY.every((k) => g[k] === undefined);
  if (!openclaw) return g as Omit<typeof g, 'watcherAccount'> & { watcherAccount?: string };
  const { account, ...rest } = g;
  return { ...rest, account: undefined, watcherAccount: account };
});

export type GmailConfig = z.output<typeof gmailSchema>;
