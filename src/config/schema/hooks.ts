import { z } from 'zod';
import { SESSION_MODES, WAKE_MODES } from '../../enums.js';
import { nonBlank, positiveInt } from './common.js';
import { directRoutesSchema, routeLimitsShape } from './limits.js';
import { tokenListSchema } from './tokens.js';
import { gmailSchema } from './gmail.js';
import { DEFAULT_HOOKS_PATH, normalizeHooksPath, normalizeMatchPath } from '../client.js';

export { SESSION_MODES, WAKE_MODES };
// Zod-free, so that the clients' view of the config (config/client.ts) shares them.
export { normalizeHooksPath, normalizeMatchPath };
export const SIGNATURE_SCHEMES = [
  'github',
  'stripe',
  'slack',
  'standard-webhooks',
  'hmac-sha256',
  'gitlab',
  'linear',
  'sentry',
  'shopify',
  'twilio',
  'bearer',
] as const;
/** The schemes whose secret is sent as it is, in a header (not an HMAC key): it must survive as header text. */
const TOKEN_SCHEMES: ReadonlySet<string> = new Set(['gitlab', 'bearer']);
/** The built-in mapping presets, named by a string in `hooks.presets` (src/hooks/mappings/presets/gmail.ts). */
export const PRESETS = ['gmail'] as const;

/**
 * The sender presets (`hooks.presets[]` objects, `{ use: "<name>", … }`): each one data file in
 * src/hooks/mappings/presets/ and a line in its catalogue (index.ts), and here the signature scheme that verifies
 * its deliveries, so that a preset's `secret` is checked by its scheme's rules when the config loads.
 */
export const SENDER_PRESETS = {
  github: 'github',
  stripe: 'stripe',
  slack: 'slack',
  'standard-webhooks': 'standard-webhooks',
  gitlab: 'gitlab',
  alertmanager: 'bearer',
  linear: 'linear',
  sentry: 'sentry',
  shopify: 'shopify',
  twilio: 'twilio',
} as const satisfies Readonly<Record<string, (typeof SIGNATURE_SCHEMES)[number]>>;

export type SenderName = keyof typeof SENDER_PRESETS;
export const SENDER_NAMES = Object.keys(SENDER_PRESETS) as [SenderName, ...SenderName[]];

const TWILIO_URL_REQUIRED =
  'required by the twilio preset: the public URL Twilio is configured to call (and signs), e.g. "https://hooks.example.com/hooks/twilio"';
/** An HTTP header field name (RFC 9110 token). */
const HEADER_NAME_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Strict base64 (Buffer.from(…, 'base64') would silently drop invalid characters and shrink the key). */
const STRICT_BASE64_RE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;

export const signatureSchema = z
  .strictObject({
    scheme: z.enum(SIGNATURE_SCHEMES),
    secret: nonBlank.optional(),
    /** Several secrets: any one verifies (rotation). */
    secrets: z.array(nonBlank).min(1).optional(),
    /** Max age (and max clock skew into the future) of a timestamp (stripe, slack, standard-webhooks, linear, sentry). */
    toleranceSeconds: positiveInt.default(300),
    /** hmac-sha256 only: the header carrying the signature (default `x-signature`); matched case-insensitively. */
    header: nonBlank
      .regex(HEADER_NAME_RE, 'must be an HTTP header name')
      .transform((h) => h.toLowerCase())
      .optional(),
    /** hmac-sha256 only: how the digest is written in the header. */
    encoding: z.enum(['hex', 'base64']).optional(),
    /** hmac-sha256 only: a prefix before the digest, e.g. `sha256=` (compared case-sensitively). */
    prefix: z.string().optional(),
    /**
     * twilio only (and required there): the public URL Twilio is configured to call, which it signs; behind a proxy
     * hookgate cannot know it. Without a query string: the request's own is appended (checked in `superRefine`).
     */
    url: z.string().trim().optional(),
  })
  .superRefine((v, ctx) => {
    if (!v.secret && !v.secrets) ctx.addIssue({ code: 'custom', message: 'set secret or secrets', path: ['secret'] });
    if (v.secret && v.secrets)
      ctx.addIssue({ code: 'custom', message: 'set either secret or secrets, not both', path: ['secrets'] });
    if (v.scheme !== 'hmac-sha256' && (v.header || v.encoding || v.prefix !== undefined))
      ctx.addIssue({
        code: 'custom',
        message: `header/encoding/prefix only apply to scheme "hmac-sha256"`,
        path: ['scheme'],
      });
    if (v.scheme === 'twilio') {
      const problem =
        v.url === undefined
          ? 'required for scheme "twilio": the public URL Twilio calls (and signs)'
          : twilioUrlProblem(v.url);
      if (problem) ctx.addIssue({ code: 'custom', message: problem, path: ['url'] });
    } else if (v.url !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'only applies to scheme "twilio"', path: ['url'] });
    }
    if (TOKEN_SCHEMES.has(v.scheme)) {
      // Compared with the header's text: a character Node does not read back as itself (not printable ASCII) could never match.
      const message = `a ${v.scheme} secret is sent as a header value: printable ASCII characters only`;
      const check = (s: string, path: PropertyKey[]) => {
        if (!/^[\x20-\x7e]+$/.test(s)) ctx.addIssue({ code: 'custom', path, message });
      };
      if (v.secret) check(v.secret, ['secret']);
      for (const [i, s] of v.secrets?.entries() ?? []) check(s, ['secrets', i]);
    }
    if (v.scheme === 'standard-webhooks') {
      // `whsec_<base64>`: the key is the decoded bytes, so a value that is not base64 could never verify anything.
      const check = (s: string, path: PropertyKey[]) => {
        if (!s.startsWith('whsec_')) return;
        const b64 = s.slice('whsec_'.length);
        if (b64 === '' || !STRICT_BASE64_RE.test(b64))
          ctx.addIssue({ code: 'custom', message: 'a whsec_ secret must be whsec_ followed by base64', path });
      };
      if (v.secret) check(v.secret, ['secret']);
      for (const [i, s] of v.secrets?.entries() ?? []) check(s, ['secrets', i]);
    }
  })
  .transform(({ secret, secrets, ...rest }) => ({ ...rest, secrets: secrets ?? [secret as string] }));

export type SignatureConfig = z.output<typeof signatureSchema>;

/**
 * Why `raw` cannot be a twilio mapping's public URL, or undefined when it can: an absolute http(s) URL, without a
 * query string (the request's own query string is appended to it), a fragment, or a user name and password
 * (hookgate takes no HTTP authentication: Twilio's signature is the credential).
 */
function twilioUrlProblem(raw: string): string | undefined {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return 'must be an absolute http(s) URL, the one Twilio is configured to call';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return 'must be an absolute http(s) URL, the one Twilio is configured to call';
  if (raw.includes('?')) return "must not contain a query string: the request's own query string is appended to it";
  if (raw.includes('#')) return 'must not contain a fragment';
  if (u.username !== '' || u.password !== '') return 'must not contain a user name or password';
  return undefined;
}

export const mappingSchema = z.strictObject({
  id: nonBlank.optional(),
  match: z
    .strictObject({
      path: z.string().transform(normalizeMatchPath).optional(),
      source: nonBlank.optional(),
      /**
       * Headers the request must carry: names case-insensitive (stored lower-cased), values compared exactly
       * (case-sensitive, after trimming the received value). E.g. `{ "x-github-event": "pull_request" }`.
       */
      headers: z
        .record(z.string(), z.string())
        .superRefine((h, ctx) => {
          for (const name of Object.keys(h)) {
            if (!HEADER_NAME_RE.test(name))
              ctx.addIssue({ code: 'custom', path: [name], message: 'must be an HTTP header name' });
            else if (['__proto__', 'prototype', 'constructor'].includes(name.toLowerCase()))
              ctx.addIssue({ code: 'custom', path: [name], message: 'may not be a prototype key' });
          }
        })
        .transform((h) => Object.fromEntries(Object.entries(h).map(([name, value]) => [name.toLowerCase(), value])))
        .optional(),
    })
    .optional(),
  action: z.enum(['wake', 'agent']).default('agent'),
  wakeMode: z.enum(WAKE_MODES).default('now'),
  name: z.string().optional(),
  agentId: nonBlank.optional(),
  sessionKey: nonBlank.optional(),
  sessionMode: z.enum(SESSION_MODES).optional(),
  messageTemplate: z.string().optional(),
  textTemplate: z.string().optional(),
  deliver: z.boolean().default(true),
  channel: nonBlank.optional(),
  to: z.string().optional(),
  /** A named account of `channel` (`channels.<platform>.accounts.<id>`); may be a template. */
  accountId: nonBlank.optional(),
  model: nonBlank.optional(),
  thinking: nonBlank.optional(),
  timeoutSeconds: z.number().positive().optional(),
  allowUnsafeExternalContent: z.boolean().default(false),
  /** Top-level payload array to fan out over: one action per item (capped at `hooks.maxFanOut`). */
  forEach: z
    .string()
    .trim()
    .regex(/^[A-Za-z_$][\w$]*$/, 'must be a top-level payload key (letters, digits, _ and $)')
    .refine((k) => !['__proto__', 'prototype', 'constructor'].includes(k), 'may not name a prototype key')
    .optional(),
  transform: z
    .strictObject({
      module: nonBlank,
      export: nonBlank.optional(),
    })
    .optional(),
  signature: signatureSchema.optional(),
  /** Client addresses allowed and a token bucket for this mapping (limits.ts; src/ingress/route-limits.ts). */
  ...routeLimitsShape,
});

export type MappingConfig = z.output<typeof mappingSchema>;

/**
 * An event type a sender preset takes: a name (`pull_request`, `invoice.paid`, Shopify's `orders/create`), a family
 * (`invoice.*`, `orders/*`) or `*` (every one).
 */
const EVENT_PATTERN_RE = /^(?:\*|[A-Za-z0-9_][\w.:/-]*(?:[./]\*)?)$/;
/** A key of a preset's `templates`: one event type, or `*` for the wording of an event type without one of its own. */
const EVENT_NAME_RE = /^(?:\*|[A-Za-z0-9_][\w.:/-]*)$/;

/** Whether `patterns` (a preset's `events`) take `event`; `*` takes every delivery, even one without an event type. */
export function eventAllowed(patterns: readonly string[], event: string | undefined): boolean {
  for (const p of patterns) {
    if (p === '*') return true;
    if (event === undefined) continue;
    if (p === event || ((p.endsWith('.*') || p.endsWith('/*')) && event.startsWith(p.slice(0, -1)))) return true;
  }
  return false;
}

const eventPattern = z
  .string()
  .trim()
  .max(100)
  .regex(
    EVENT_PATTERN_RE,
    'must be an event type (letters, digits, _ . : / -), a family like "invoice.*" or "orders/*", or "*"',
  );

/**
 * A sender preset (`hooks.presets[]` object): the sender's name and secret, and the mapping keys a user sets per
 * sender. The output carries the built `signature` (the sender's scheme, `secret`/`secrets`, `toleranceSeconds`)
 * and `path`, defaulted to the sender's name.
 */
export const senderPresetSchema = mappingSchema
  .pick({
    action: true,
    wakeMode: true,
    name: true,
    agentId: true,
    sessionKey: true,
    sessionMode: true,
    deliver: true,
    channel: true,
    to: true,
    accountId: true,
    model: true,
    thinking: true,
    timeoutSeconds: true,
    allowUnsafeExternalContent: true,
    allowFrom: true,
    rateLimit: true,
  })
  .extend({
    use: z.enum(SENDER_NAMES, {
      error: (i) => `unknown sender ${JSON.stringify(i.input)}, expected one of ${SENDER_NAMES.join(', ')}`,
    }),
    path: z
      .string()
      .transform(normalizeMatchPath)
      .refine((p) => p !== '' && p !== 'wake' && p !== 'agent', 'must be a sub-path other than wake and agent')
      .optional(),
    secret: nonBlank.optional(),
    secrets: z.array(nonBlank).min(1).optional(),
    toleranceSeconds: positiveInt.optional(),
    /** twilio only (and required there): the public URL Twilio is configured to call, which it signs. */
    url: z.string().trim().optional(),
    /** Event types that make a run or wake; others do not match. Default: the preset's own list. */
    events: z.array(eventPattern).min(1).optional(),
    /** A message template per event type (`*`: events without wording of their own), over the preset's. */
    templates: z
      .record(z.string(), z.string())
      .superRefine((t, ctx) => {
        const message = 'must be an event type, or "*" for events without wording of their own';
        for (const event of Object.keys(t))
          if (!EVENT_NAME_RE.test(event)) ctx.addIssue({ code: 'custom', path: [event], message });
      })
      .optional(),
  })
  .transform(({ use, path, secret, secrets, toleranceSeconds, url, ...rest }, ctx) => {
    const scheme = SENDER_PRESETS[use];
    // A preset entry has `url` itself (the scheme's own messages name `signature.url`).
    const urlProblem =
      scheme === 'twilio'
        ? url === undefined && TWILIO_URL_REQUIRED
        : url !== undefined && 'only applies to the twilio preset';
    if (urlProblem) {
      ctx.addIssue({ code: 'custom', path: ['url'], message: urlProblem });
      return z.NEVER;
    }
    const signature = signatureSchema.safeParse({
      scheme,
      secret,
      secrets,
      toleranceSeconds,
      ...(url !== undefined ? { url } : {}),
    });
    if (!signature.success) {
      for (const i of signature.error.issues) ctx.addIssue({ code: 'custom', message: i.message, path: i.path });
      return z.NEVER;
    }
    const { events, templates } = rest;
    if (events && templates) {
      for (const event of Object.keys(templates)) {
        if (event !== '*' && !eventAllowed(events, event))
          ctx.addIssue({
            code: 'custom',
            path: ['templates', event],
            message: `"${event}" is not in events, so this template is never used`,
          });
      }
    }
    return { use, path: path ?? use, signature: signature.data, ...rest };
  });

export type SenderPresetConfig = z.output<typeof senderPresetSchema>;

const builtinPreset = z.enum(PRESETS, {
  error: (i) =>
    `unknown preset ${JSON.stringify(i.input)}: "gmail" is the built-in one; a sender is an object, ` +
    `e.g. { use: "github", secret: { env: "GITHUB_WEBHOOK_SECRET" } } (senders: ${SENDER_NAMES.join(', ')})`,
});

/** One `hooks.presets` entry: a built-in name, or a sender preset object (each checked by its own schema). */
const presetEntrySchema = z.unknown().transform((v, ctx): (typeof PRESETS)[number] | SenderPresetConfig => {
  const r = typeof v === 'string' ? builtinPreset.safeParse(v) : senderPresetSchema.safeParse(v);
  if (r.success) return r.data;
  for (const i of r.error.issues) ctx.addIssue({ ...i });
  return z.NEVER;
});

export const hooksSchema = z
  .strictObject({
    enabled: z.boolean().default(false),
    token: z.string().trim().optional(),
    /** More tokens beside `token`, each with an id and an optional expiry (schema/tokens.ts). */
    tokens: tokenListSchema,
    path: z.string().default(DEFAULT_HOOKS_PATH).transform(normalizeHooksPath),
    maxBodyBytes: positiveInt.default(262144),
    bodyTimeoutMs: positiveInt.default(30000),
    allowedAgentIds: z.array(z.string().trim()).optional(),
    defaultSessionKey: nonBlank.optional(),
    allowRequestSessionKey: z.boolean().default(false),
    allowedSessionKeyPrefixes: z
      .array(z.string())
      .transform((list) => [...new Set(list.map((p) => p.trim().toLowerCase()).filter(Boolean))])
      .optional(),
    presets: z.array(presetEntrySchema).default([]),
    mappings: z.array(mappingSchema).default([]),
    /** `allowFrom` and `rateLimit` of the direct routes `/wake` and `/agent` (limits.ts). */
    routes: directRoutesSchema,
    transformsDir: z.string().optional(),
    gmail: gmailSchema.prefault({}),
    authFailureLimit: z
      .strictObject({
        maxFailures: positiveInt.default(20),
        windowSeconds: positiveInt.default(60),
        lockoutSeconds: positiveInt.default(60),
        /** Bound on tracked client addresses; the oldest unlocked entries are evicted first. */
        maxTrackedClients: positiveInt.default(10000),
      })
      .prefault({}),
    idempotencyTtlSeconds: positiveInt.default(86400),
    /** Idempotency keys kept per sender (client address, IPv6 by /64); a new key past it expires the sender's oldest. */
    idempotencyMaxKeys: positiveInt.default(10000),
    /** Refused requests are counted per window, not stored one by one (docs/operations.md, "Data kept"). */
    refusals: z
      .strictObject({
        windowSeconds: positiveInt.default(60),
        /** Distinct (status, code, path class, address bucket) keys per window; more fold into one `other` key. */
        maxKeys: positiveInt.default(256),
        /** Windows of counts kept in the store; the oldest are deleted first. */
        maxStoredWindows: positiveInt.default(1440),
      })
      .prefault({}),
    agentAcceptedStatus: z.union([z.literal(200), z.literal(202)]).default(200),
    /** Cap on items of one `forEach` fan-out; the rest are refused (413-free, logged). */
    maxFanOut: positiveInt.default(200),
    /** Longest a `waitForCompletion` answer is held (the run's own timeout, plus a grace, bounds it too). */
    maxWaitSeconds: positiveInt.default(120),
    /** How long the record of each received hook (metadata only) is kept. */
    receivedRetentionDays: positiveInt.default(7),
    /**
     * How long finished work is kept: runs that ended (with their deliveries), consumed events, heartbeat deliveries,
     * and transcript turns no prompt reads again (docs/operations.md, "Retention").
     */
    runRetentionDays: positiveInt.default(7),
  })
  .prefault({});

export type HooksConfig = z.output<typeof hooksSchema>;
