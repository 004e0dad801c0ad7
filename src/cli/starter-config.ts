/**
 * The commented config written by `hookgate init`: the embedded default (hooks and the admin listener on, SQLite,
 * the echo model, the log channel) spelt out, with the common keys shown at their defaults. Loaded, it is the same
 * config as the embedded default run in the file's directory (test/cli/init.test.ts holds it to that).
 */

import { newToken } from '../config/defaults.js';

/** Where each secret and the store are: JSON5 value texts (a quoted token, `{ env: "NAME" }`, `{ file: "path" }`). */
export interface StarterValues {
  hookToken: string;
  adminToken: string;
  storagePath: string;
  /** The line above `hooks.token` and `admin.token`: where the value lives. */
  secretsNote: string;
}

/** The variables `init --service` puts in the environment file and names in the config. */
export const SERVICE_ENV = { hookToken: 'HOOKGATE_HOOK_TOKEN', adminToken: 'HOOKGATE_ADMIN_TOKEN' } as const;

export const json5String = (s: string): string => JSON.stringify(s);

/** The config of a checkout: both tokens inline (the file is 0600), the store in ./data next to it. */
export function localValues(hookToken: string, adminToken: string): StarterValues {
  return {
    hookToken: json5String(hookToken),
    adminToken: json5String(adminToken),
    storagePath: json5String('./data/hookgate.db'),
    secretsNote: 'this file holds the hook and admin tokens: keep it 0600 and out of git',
  };
}

/** The config of a service: no secret in it (each one `{ env: ... }`, set by the environment file), the store absolute. */
export function serviceValues(storagePath: string, envFile: string): StarterValues {
  return {
    hookToken: `{ env: ${json5String(SERVICE_ENV.hookToken)} }`,
    adminToken: `{ env: ${json5String(SERVICE_ENV.adminToken)} }`,
    storagePath: json5String(storagePath),
    secretsNote: `no secret in this file: each is { env: "NAME" }, set in ${envFile}`,
  };
}

/** A string is the hook token of a checkout's config (`localValues`), with a new admin token unless one is given. */
export function starterConfig(values: StarterValues | string, adminToken?: string): string {
  const v = typeof values === 'string' ? localValues(values, adminToken ?? newToken()) : values;
  return `// hookgate config (JSON5). Reference: docs/config.md
// Values may use \${ENV_VAR}; any secret may instead be { env: "NAME" } or { file: "path" }.
// This is the embedded default (the config used without a file) spelt out; most keys are shown at their default.
// Secrets: ${v.secretsNote}.
{
  gateway: {
    bind: "127.0.0.1",        // keep loopback; put a reverse proxy in front to expose it
    port: 18789,
    trustedProxies: [],       // IPs/CIDRs of your proxy, whose X-Forwarded-For is believed
    stopGraceSeconds: 10,     // on SIGTERM: how long running turns and open requests may finish
  },
  storage: { driver: "sqlite", path: ${v.storagePath} },
  hooks: {
    enabled: true,
    // A dedicated token for hook senders (new one: \`hookgate token\`). Do not reuse other secrets.
    token: ${v.hookToken},
    path: "/hooks",
    maxBodyBytes: 262144,
    bodyTimeoutMs: 30000,
    // allowedAgentIds: ["main"],      // the agents a request may name; omitted: every agent, []: none
    allowRequestSessionKey: false,     // let senders choose sessionKey? keep false unless needed
    // allowedSessionKeyPrefixes: ["hook:"],
    // defaultSessionKey: "hook:ingress",
    idempotencyTtlSeconds: 86400,
    authFailureLimit: { maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60 },
    // A sender in one line (docs/senders.md): { use: "github", secret: { env: "GITHUB_WEBHOOK_SECRET" } }
    presets: [],
    mappings: [],
  },
  // The admin listener (docs/admin.md): the dashboard, /metrics, /healthz, /readyz, and \`hookgate tail\`.
  // Its own port and token; the token is for operators only (never give it to a sender).
  admin: {
    enabled: true,
    bind: "127.0.0.1",
    port: 18790,
    token: ${v.adminToken},
  },
  agents: {
    defaults: {
      model: "echo/echo",
      timeoutSeconds: 600,
      retry: { maxSeconds: 1800 },     // a model outage: runs wait and retry this long (0: fail at once)
    },
    list: [{ id: "main", default: true }],
  },
  models: {
    providers: {
      // local: { api: "openai-chat", baseUrl: "http://127.0.0.1:11434/v1" },   // Ollama
      // claude: { api: "anthropic-messages", apiKey: { env: "ANTHROPIC_API_KEY" } },
    },
  },
  heartbeat: { every: "30m", ackMaxChars: 300 },
  channels: {
    default: { channel: "log" },       // where replies go while the main session has no route (hookgate sessions route)
    log: {},                           // deliveries printed to stdout as JSON lines
  },
  logging: { level: "info" },
}
`;
}
