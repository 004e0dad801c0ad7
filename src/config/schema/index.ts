import { isIP } from 'node:net';
import { z } from 'zod';
import { durationMs, modelRef, nonBlank, port, positiveInt } from './common.js';
import { channelsSchema, CORE_CHANNELS } from './channels.js';
import { hooksSchema } from './hooks.js';
import { modelsSchema } from './models.js';
import { tokenListSchema } from './tokens.js';
import { databaseUrlProblem } from '../database-url.js';
import { DEFAULT_ADMIN_BIND, DEFAULT_ADMIN_PORT, DEFAULT_GATEWAY_BIND, DEFAULT_GATEWAY_PORT } from '../client.js';

export const DEFAULT_HEARTBEAT_PROMPT =
  'Heartbeat. Read the system events above, if any, and act on what needs doing. ' +
  'If nothing needs attention, reply exactly HEARTBEAT_OK.';

/** An IP address or a CIDR block (v4 or v6). */
const ipOrCidr = z
  .string()
  .trim()
  .refine((s) => {
    const [ip, bits, extra] = s.split('/');
    if (extra !== undefined || !ip) return false;
    const family = isIP(ip);
    if (!family) return false;
    if (bits === undefined) return true;
    const n = Number(bits);
    return /^\d+$/.test(bits) && n >= 0 && n <= (family === 4 ? 32 : 128);
  }, 'must be an IP address or CIDR block like 10.0.0.0/8');

/**
 * The listener's connection-level limits (docs/config.md#gatewaylimits): what one client can hold open, and for how
 * long, before a request is even read. Applied at start and at every reload.
 */
const connectionLimits = z
  .strictObject({
    /** Time to receive a request's headers (from the connection's start, or the end of its previous request). */
    headersTimeoutMs: positiveInt.default(10_000),
    /** Time to receive a whole request, headers and body (`hooks.bodyTimeoutMs` bounds the body alone). */
    requestTimeoutMs: positiveInt.default(60_000),
    /** How long a connection is kept open, idle, after an answer, for the client's next request. */
    keepAliveTimeoutMs: positiveInt.default(5_000),
    /** Open connections in all; the next one is closed at once. Keep it below the process's file limit. */
    maxConnections: positiveInt.default(512),
    /**
     * Open connections per client address (an IPv6 client per /64); the next one is closed at once. Trusted proxies
     * (`trustedProxies`) are exempt: every client behind them shares their address.
     */
    maxConnectionsPerAddress: positiveInt.default(64),
  })
  .refine((l) => l.headersTimeoutMs <= l.requestTimeoutMs, {
    message: 'headersTimeoutMs must not exceed requestTimeoutMs',
    path: ['headersTimeoutMs'],
  })
  .refine((l) => l.maxConnectionsPerAddress <= l.maxConnections, {
    message: 'maxConnectionsPerAddress must not exceed maxConnections',
    path: ['maxConnectionsPerAddress'],
  })
  .prefault({});

const agentSchema = z.strictObject({
  id: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9][a-z0-9_-]*$/, 'agent ids are letters, digits, - and _'),
  default: z.boolean().optional(),
  name: z.string().optional(),
  model: modelRef.optional(),
  systemPrompt: z.string().optional(),
  thinking: nonBlank.optional(),
  timeoutSeconds: z.number().positive().optional(),
});

const modelAllowlist = z.union([z.array(nonBlank), z.record(nonBlank, z.strictObject({ alias: nonBlank.optional() }))]);

export const configSchema = z.strictObject({
  gateway: z
    .strictObject({
      bind: nonBlank.default(DEFAULT_GATEWAY_BIND),
      port: port.default(DEFAULT_GATEWAY_PORT),
      trustedProxies: z.array(ipOrCidr).default([]),
      /**
       * On SIGTERM/SIGINT: how long requests in flight and running turns get to finish before they are cut off
       * (runs given back to the queue, agent children killed). examples/systemd's TimeoutStopSec allows for it.
       */
      stopGraceSeconds: z.number().min(0).max(3600).default(10),
      limits: connectionLimits,
    })
    .prefault({}),
  storage: z
    .preprocess(
      // `driver` defaults to sqlite, so `storage: { path: "..." }` is enough.
      (v) => (v && typeof v === 'object' && !('driver' in v) ? { ...v, driver: 'sqlite' } : v),
      z.discriminatedUnion('driver', [
        z.strictObject({
          driver: z.literal('sqlite'),
          path: nonBlank.default('./data/hookgate.db'),
          /** "normal": durable across process crashes (kill -9); "full": also across power loss, slower. */
          synchronous: z.enum(['normal', 'full']).default('normal'),
          /**
           * Where commits run: "inline" on the request thread (cheapest when commits do not fsync), "thread" on a
           * writer thread (keeps the event loop free while SQLite fsyncs). Default: "thread" with synchronous "full".
           */
          writer: z.enum(['inline', 'thread']).optional(),
          /**
           * Inline writer: who copies the WAL back into the database file. "auto": SQLite, on the writing connection,
           * after a commit that took the WAL past 1000 pages (its fsyncs hold the event loop a few ms each time);
           * "thread": a thread of its own every 250 ms (no fsync on the event loop; ~10 MB more resident).
           */
          checkpoints: z.enum(['auto', 'thread']).default('auto'),
        }),
        z.strictObject({
          driver: z.literal('postgres'),
          /** A secret (it carries the password): `{ env: "DATABASE_URL" }`, `{ file }` or `${VAR}` like any other. */
          url: nonBlank.superRefine((url, ctx) => {
            const problem = databaseUrlProblem(url);
            if (problem) ctx.addIssue({ code: 'custom', message: problem });
          }),
          /** Connections per node to the database (plus one for LISTEN): docs/scale-out.md#sizing-the-connection-pool. */
          poolSize: positiveInt.max(1000, 'at most 1000 connections per node').default(10),
        }),
      ]),
    )
    .prefault({}),
  hooks: hooksSchema,
  agents: z
    .strictObject({
      defaults: z
        .strictObject({
          model: modelRef.default('echo/echo'),
          models: modelAllowlist.optional(),
          timeoutSeconds: z.number().positive().default(600),
          thinking: nonBlank.optional(),
          /** Agent runs executing at once. */
          maxConcurrent: positiveInt.default(4),
          /**
           * A run whose model call fails transiently (unreachable, reset, timed out, 429, 5xx) is queued again with
           * backoff, for at most `maxSeconds` from its first such failure (0: fail at once, as before).
           */
          retry: z
            .strictObject({
              maxSeconds: z.number().min(0).default(1800),
              initialBackoffMs: positiveInt.default(5000),
              maxBackoffMs: positiveInt.default(300_000),
            })
            .prefault({}),
        })
        .prefault({}),
      list: z
        .array(agentSchema)
        .min(1, 'at least one agent')
        .default([{ id: 'main', default: true }]),
    })
    .prefault({}),
  models: modelsSchema,
  heartbeat: z
    .strictObject({
      every: durationMs.default(30 * 60_000),
      prompt: nonBlank.default(DEFAULT_HEARTBEAT_PROMPT),
      ackMaxChars: z.number().int().min(0).default(300),
    })
    .prefault({}),
  channels: channelsSchema,
  admin: z
    .strictObject({
      enabled: z.boolean().default(false),
      bind: nonBlank.default(DEFAULT_ADMIN_BIND),
      port: port.default(DEFAULT_ADMIN_PORT),
      token: z.string().trim().optional(),
      tokens: tokenListSchema,
    })
    .prefault({}),
  logging: z
    .strictObject({
      level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
      /** Days the audit trail (`hookgate audit`) is kept in the store; the log lines are the log's business. */
      auditRetentionDays: positiveInt.default(90),
    })
    .prefault({}),
});

export type RawConfig = z.output<typeof configSchema>;
export { CORE_CHANNELS };
