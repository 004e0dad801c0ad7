/**
 * The server config the reliability tests and `npm run soak` run against: the direct routes, a templated mapping and
 * one with a GitHub signature (a signature-capable path reads the body before authenticating), no heartbeat, and
 * 127.0.0.1 trusted as a proxy so `x-forwarded-for` gives each request its own client address.
 */
export const RELIABILITY_CONFIG = {
  logging: { level: 'info' },
  heartbeat: { every: 'off' },
  gateway: { trustedProxies: ['127.0.0.1'] },
  hooks: {
    mappings: [
      {
        match: { path: 'github' },
        action: 'wake',
        textTemplate: 'github {{payload.action}} {{headers.x-github-event}}',
        wakeMode: 'next-heartbeat',
        signature: { scheme: 'github', secret: 'fuzz-github-secret-0123456789' },
      },
      {
        match: { path: 'templated' },
        action: 'agent',
        messageTemplate: 'from {{payload.who}}: {{payload}}',
        deliver: false,
      },
    ],
  },
};
