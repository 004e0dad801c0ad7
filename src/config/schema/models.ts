import { z } from 'zod';
import { httpUrl, nonBlank, positiveInt } from './common.js';

/** The built-in deterministic provider: always present under the id `echo`. */
export const ECHO_PROVIDER_ID = 'echo';

const common = {
  /** When set, only these model names are accepted for this provider. */
  models: z.array(nonBlank).optional(),
  /** Per-request timeout of the provider call (the run's own timeout still applies). */
  requestTimeoutMs: positiveInt.optional(),
  /** Attempts for transient failures (connection refused, 429, 5xx), with exponential backoff. */
  maxAttempts: positiveInt.default(3),
};

export const openaiChatProviderSchema = z.strictObject({
  api: z.literal('openai-chat'),
  baseUrl: httpUrl.default('https://api.openai.com/v1'),
  apiKey: z.string().optional(),
  headers: z.record(z.string(), z.string()).optional(),
  ...common,
});

export const anthropicProviderSchema = z.strictObject({
  api: z.literal('anthropic-messages'),
  baseUrl: httpUrl.default('https://api.anthropic.com'),
  apiKey: z.string().optional(),
  /** Extra request headers (e.g. `anthropic-beta`, or what a proxy in front of the API wants). */
  headers: z.record(z.string(), z.string()).optional(),
  anthropicVersion: nonBlank.default('2023-06-01'),
  /** `max_tokens` of a request; with `thinking` the budget is added on top. */
  maxTokens: positiveInt.default(4096),
  ...common,
});

export const commandProviderSchema = z.strictObject({
  api: z.literal('command'),
  command: nonBlank,
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  ...common,
});

export const echoProviderSchema = z.strictObject({
  api: z.literal('echo'),
  ...common,
});

export const providerSchema = z.discriminatedUnion('api', [
  openaiChatProviderSchema,
  anthropicProviderSchema,
  commandProviderSchema,
  echoProviderSchema,
]);

export type ProviderConfig = z.output<typeof providerSchema>;

export const modelsSchema = z
  .strictObject({
    providers: z
      .record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/i, 'provider ids are letters, digits, - and _'), providerSchema)
      .default({})
      .superRefine((providers, ctx) => {
        // `echo` is built in: the id may be configured (e.g. to set `models`), but only as an echo provider.
        const echo = providers[ECHO_PROVIDER_ID];
        if (echo && echo.api !== 'echo') {
          ctx.addIssue({
            code: 'custom',
            path: [ECHO_PROVIDER_ID, 'api'],
            message: `the id "${ECHO_PROVIDER_ID}" is the built-in echo provider; pick another id for an ${echo.api} provider`,
          });
        }
      }),
  })
  .prefault({});
