import { z } from 'zod';
import { withAccounts } from './accounts.js';
import { httpUrl, nonBlank, port, positiveInt } from './common.js';

/** The nine core messaging platforms, in the order the docs list them (docs/channels.md). */
export const CORE_CHANNELS = [
  'whatsapp',
  'telegram',
  'discord',
  'irc',
  'googlechat',
  'slack',
  'signal',
  'imessage',
  'msteams',
] as const;
/** Extension channels built into hookgate. Plugins add more. */
export const BUILTIN_EXTENSION_CHANNELS = ['webhook', 'log'] as const;
/** Alternative spellings accepted in requests and config. */
export const CHANNEL_ALIASES: Readonly<Record<string, string>> = {
  imsg: 'imessage',
  teams: 'msteams',
  'google-chat': 'googlechat',
};

/** Per-request timeout of a platform channel's HTTP calls. */
const timeoutMs = (ms: number) => positiveInt.default(ms);

export const telegramSchema = z.strictObject({
  /** From @BotFather: `<bot id>:<secret>`. */
  botToken: nonBlank.regex(/^\d+:[A-Za-z0-9_-]+$/, 'must be a Bot API token like 123456789:AAH... (from @BotFather)'),
  apiBaseUrl: httpUrl.default('https://api.telegram.org'),
  timeoutMs: timeoutMs(15_000),
});
export const slackSchema = z.strictObject({
  /** Bot User OAuth Token (`xoxb-...`) with the chat:write scope. */
  botToken: nonBlank.regex(/^xox[a-z]?[-.]/, 'must be a Slack token (xoxb-...)'),
  apiBaseUrl: httpUrl.default('https://slack.com/api'),
  timeoutMs: timeoutMs(15_000),
});
export const discordSchema = z.strictObject({
  /** The bot token itself; hookgate adds the `Bot ` prefix. */
  botToken: nonBlank.refine((t) => !/^bot\s/i.test(t), 'give the token without the "Bot " prefix'),
  apiBaseUrl: httpUrl.default('https://discord.com/api/v10'),
  timeoutMs: timeoutMs(15_000),
});
export const whatsappSchema = z.strictObject({
  accessToken: nonBlank,
  phoneNumberId: nonBlank.regex(/^\d+$/, 'must be the numeric Phone number ID (not the phone number)'),
  apiBaseUrl: httpUrl.default('https://graph.facebook.com'),
  apiVersion: nonBlank.regex(/^v\d+\.\d+$/, 'must be a Graph API version like v21.0').default('v21.0'),
  timeoutMs: timeoutMs(15_000),
});
export const signalSchema = z.strictObject({
  /** signal-cli-rest-api has no public endpoint: this is your own server. */
  apiBaseUrl: httpUrl,
  /** The account registered (or linked) in signal-cli, in international format. */
  number: nonBlank.regex(/^\+\d{6,15}$/, 'must be the registered number in international format, like +15551234567'),
  timeoutMs: timeoutMs(30_000),
});
export const imessageSchema = z.strictObject({
  /** The BlueBubbles server. */
  serverUrl: httpUrl,
  password: nonBlank,
  method: z.enum(['apple-script', 'private-api']).default('apple-script'),
  /** BlueBubbles answers only once Messages.app has sent the message, which can take a while. */
  timeoutMs: timeoutMs(60_000),
});

/** The fields of a Google service-account key file that the JWT-bearer grant needs. */
const serviceAccountKey = z.looseObject({
  client_email: nonBlank,
  private_key: z.string().includes('PRIVATE KEY', { error: 'must be a PEM private key' }),
  private_key_id: z.string().optional(),
});
export const googlechatSchema = z
  .strictObject({
    /** A service-account key file (JSON), relative to the config file. */
    serviceAccountFile: nonBlank.optional(),
    /** The service-account key itself: its JSON text, or the object. */
    serviceAccount: z.union([z.string(), serviceAccountKey]).optional(),
    /** A ready access token instead (short-lived; for tests and external token refreshers). */
    accessToken: nonBlank.optional(),
    apiBaseUrl: httpUrl.default('https://chat.googleapis.com'),
    tokenUrl: httpUrl.default('https://oauth2.googleapis.com/token'),
    timeoutMs: timeoutMs(15_000),
  })
  .superRefine((v, ctx) => {
    const given = [v.serviceAccountFile, v.serviceAccount, v.accessToken].filter((x) => x !== undefined).length;
    if (given !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: 'set exactly one of serviceAccountFile, serviceAccount, accessToken',
        path: [],
      });
    }
    if (typeof v.serviceAccount === 'string') {
      // Never echo the value: it holds a private key.
      let parsed: unknown;
      try {
        parsed = JSON.parse(v.serviceAccount);
      } catch {
        ctx.addIssue({
          code: 'custom',
          message: 'must be the JSON text of a service-account key',
          path: ['serviceAccount'],
        });
        return;
      }
      if (!serviceAccountKey.safeParse(parsed).success) {
        ctx.addIssue({
          code: 'custom',
          message: 'needs client_email and private_key (a service-account key)',
          path: ['serviceAccount'],
        });
      }
    }
  });
export const msteamsSchema = z.preprocess(
  // `apiBaseUrl` is what every other platform calls its base URL: accepted here as the Bot Framework's serviceUrl.
  (v) => {
    if (!v || typeof v !== 'object' || !('apiBaseUrl' in v) || 'serviceUrl' in v) return v;
    const { apiBaseUrl, ...rest } = v as Record<string, unknown>;
    return { ...rest, serviceUrl: apiBaseUrl };
  },
  z.strictObject({
    /** Microsoft App ID of the Azure Bot. */
    appId: nonBlank,
    /** Client secret of that app registration. */
    appPassword: nonBlank,
    /** Directory (tenant) ID, for single-tenant bots; multi-tenant bots use the botframework.com tenant. */
    tenantId: nonBlank.optional(),
    serviceUrl: httpUrl.default('https://smba.trafficmanager.net/teams'),
    /** Defaults to https://login.microsoftonline.com/<tenantId or botframework.com>/oauth2/v2.0/token. */
    tokenUrl: httpUrl.optional(),
    timeoutMs: timeoutMs(15_000),
  }),
);
/** A single line: no CR, LF or NUL (they would end an IRC line or split an HTTP header, injecting commands). */
const singleLine = z.string().regex(/^[^\r\n\0]*$/, 'must be a single line (no CR, LF or NUL)');
/** An IRC nickname (RFC 2812 section 2.3.1: a letter or special first, then letters, digits, specials or "-"). */
const ircNick = z
  .string()
  .trim()
  .regex(
    /^[A-Za-z[\]\\`_^{|}][A-Za-z0-9[\]\\`_^{|}-]*$/,
    'must be an IRC nickname (letters, digits, -[]\\`_^{|}, not starting with a digit or -)',
  );
export const ircSchema = z.strictObject({
  host: nonBlank,
  port: port.default(6697),
  tls: z.boolean().default(true),
  /** Accept self-signed server certificates (private networks only). */
  tlsInsecure: z.boolean().default(false),
  nick: ircNick,
  /** The ident/user name sent with USER; defaults to the nick. */
  username: singleLine.regex(/^[^\s@]+$/, 'must be one word without @').optional(),
  realname: singleLine.optional(),
  /** Server password (PASS). */
  password: singleLine.optional(),
  /** SASL PLAIN account name; defaults to the nick. */
  saslUsername: singleLine.min(1).optional(),
  /** SASL PLAIN password (IRCv3 `sasl`): set it and the connection fails unless the server logs the account in. */
  saslPassword: singleLine.min(1).optional(),
  /** Keys of +k channels, by channel name: `{ "#ops": "key" }`. */
  channelKeys: z
    .record(
      z.string().regex(/^[#&+!][^\s,\x07]+$/, 'must be a channel name like #ops'),
      singleLine.regex(/^\S+$/, 'must be one word'),
    )
    .optional(),
  /** Lines sent back to back before flood control spaces them out by `floodIntervalMs`. */
  floodBurst: positiveInt.default(4),
  /** Pause between lines after the burst. Below ~500 ms most networks disconnect for flooding. */
  floodIntervalMs: z.number().int().min(0).default(1000),
  /** Bound on connecting + registering, and on the server's confirmation (PONG) after the last line of a message. */
  timeoutMs: positiveInt.default(30000),
});
/** Headers the webhook channel sets itself: a target's `headers` may not replace them. */
const RESERVED_WEBHOOK_HEADERS = new Set([
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-type',
  'content-length',
  'host',
]);
export const webhookChannelSchema = z.strictObject({
  targets: z
    .record(
      nonBlank,
      z.strictObject({
        url: httpUrl,
        /** Standard Webhooks secret, `whsec_<base64>`. */
        secret: z
          .string()
          .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, 'must be a Standard Webhooks secret: whsec_<base64>')
          .refine(
            (s) => Buffer.from(s.slice(6), 'base64').length >= 24,
            'the key after whsec_ must decode to at least 24 bytes (Standard Webhooks)',
          ),
        headers: z
          .record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name'), singleLine)
          .refine(
            (h) => Object.keys(h).every((k) => !RESERVED_WEBHOOK_HEADERS.has(k.toLowerCase())),
            'may not set webhook-id, webhook-timestamp, webhook-signature, content-type, content-length or host',
          )
          .optional(),
        timeoutMs: positiveInt.default(10000),
      }),
    )
    .default({}),
});
export const logChannelSchema = z.strictObject({
  /** A JSONL file to append to (relative to the config file's directory); stdout when unset. */
  path: nonBlank.optional(),
});

export const channelsSchema = z
  .strictObject({
    default: z.strictObject({ channel: nonBlank, to: z.string().optional() }).optional(),
    telegram: withAccounts(telegramSchema).optional(),
    slack: withAccounts(slackSchema).optional(),
    discord: withAccounts(discordSchema).optional(),
    whatsapp: withAccounts(whatsappSchema).optional(),
    signal: withAccounts(signalSchema).optional(),
    imessage: withAccounts(imessageSchema).optional(),
    googlechat: withAccounts(googlechatSchema).optional(),
    msteams: withAccounts(msteamsSchema).optional(),
    irc: withAccounts(ircSchema).optional(),
    webhook: webhookChannelSchema.optional(),
    log: logChannelSchema.optional(),
    /** ESM modules (.mjs/.js) exporting an extension channel, relative to the config file and inside its directory. */
    plugins: z
      .array(nonBlank.regex(/\.m?js$/, 'must be an ESM module (.mjs or .js)'))
      .refine((a) => new Set(a).size === a.length, 'lists a module twice')
      .default([]),
    outbox: z
      .strictObject({
        /** 8 attempts with these delays (30 s doubling, capped at 30 min, jittered) span about an hour. */
        // 2 s doubling to 30 min over 15 attempts: the first retries come within seconds (a blip is over before a
        // user notices), and the whole series still spans about two hours of platform outage before a dead letter.
        maxAttempts: positiveInt.default(15),
        initialBackoffMs: positiveInt.default(2_000),
        maxBackoffMs: positiveInt.default(30 * 60_000),
        /** Deliveries sent at once (different recipients; one recipient's deliveries go in order). */
        concurrency: positiveInt.default(8),
      })
      .prefault({}),
  })
  .prefault({});

export type ChannelsConfig = z.output<typeof channelsSchema>;
