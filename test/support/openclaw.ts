/**
 * OpenClaw's `hooks.gmail` block as `openclaw webhooks gmail setup` writes it (the watcher's settings: the Pub/Sub
 * topic and subscription, the local push server, Tailscale Funnel), shared by the importer's and the config's tests.
 */
export const OPENCLAW_GMAIL_BLOCK = {
  account: 'openclaw@gmail.com',
  label: 'INBOX',
  topic: 'projects/my-project/topics/gog-gmail-watch',
  subscription: 'gog-gmail-watch-push',
  pushToken: 'shared-push-token',
  hookUrl: 'http://127.0.0.1:18789/hooks/gmail',
  includeBody: true,
  maxBytes: 20000,
  renewEveryMinutes: 720,
  serve: { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' },
  tailscale: { mode: 'funnel', path: '/gmail-pubsub' },
  model: 'anthropic/claude-sonnet-4-6',
  thinking: 'low',
};
