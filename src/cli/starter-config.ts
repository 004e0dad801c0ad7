/** The commented starter config written by `hookgate init`: the common keys, most at their defaults. */
export function starterConfig(token: string): string {
  return `// hookgate config (JSON5). Reference: docs/config.md
// Values may use \${ENV_VAR}; any secret may instead be { env: "NAME" } or { file: "path" }.
// Most keys below are shown at their default; hooks.enabled (default false) is turned on here.
{
  gateway: {
    bind: "127.0.0.1",        // keep loopback; put a reverse proxy in front to expose it
    port: 18789,
    trustedProxies: [],       // IPs/CIDRs of your proxy, whose X-Forwarded-For is believed
    stopGraceSeconds: 10,     // on SIGTERM: how long running turns and open requests may finish
  },
  storage: { driver: "sqlite", path: "./data/hookgate.db" },
  hooks: {
    enabled: true,
    // A dedicated token for hook senders (new one: \`hookgate token\`). Do not reuse other secrets.
    token: "${token}",
    path: "/hooks",
    maxBodyBytes: 262144,
    bodyTimeoutMs: 30000,
    allowedAgentIds: ["*"],            // [] denies every agent
    allowRequestSessionKey: false,     // let senders choose sessionKey? keep false unless needed
    // allowedSessionKeyPrefixes: ["hook:"],
    // defaultSessionKey: "hook:ingress",
    idempotencyTtlSeconds: 86400,
    authFailureLimit: { maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60 },
    // A sender in one line (docs/senders.md): { use: "github", secret: { env: "GITHUB_WEBHOOK_SECRET" } }
    presets: [],
    mappings: [],
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
