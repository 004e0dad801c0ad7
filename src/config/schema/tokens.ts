/**
 * `hooks.tokens` and `admin.tokens`: the list of accepted tokens beside the single `token`, so a token can be
 * rotated without downtime (docs/operations.md, "Rotating a token"). Each entry has an id (named in received
 * records and log lines, never the token) and an optional `notAfter`, after which it is refused like a wrong token.
 */
import { z } from 'zod';
import { parseInstant } from '../client.js';

// Shared with the clients' zod-free view of the config (config/client.ts).
export { clientToken, parseInstant } from '../client.js';

/** The id a single `hooks.token` / `admin.token` has in records and logs; reserved in `tokens` while `token` is set. */
export const DEFAULT_TOKEN_ID = 'default';

/** Ids go into records and log lines: short and plain. */
export const TOKEN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** An ISO 8601 date-time with a zone (`2026-12-01T00:00:00Z`, `…+01:00`) or epoch milliseconds; becomes epoch ms. */
export const instantMs = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseInstant(v);
  if (ms === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `expected an ISO date-time with a zone ("2026-12-01T00:00:00Z") or epoch milliseconds, got ${JSON.stringify(v)}`,
    });
    return z.NEVER;
  }
  return ms;
});

export const tokenEntrySchema = z.strictObject({
  id: z
    .string()
    .trim()
    .regex(TOKEN_ID_PATTERN, 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit'),
  /** The secret; any secret form of the config (`{ env }`, `{ file }`, `${VAR}`) is resolved before this. */
  token: z.string().trim().min(1, 'must be a non-empty string'),
  /** Refused from this instant on (epoch ms after parsing). */
  notAfter: instantMs.optional(),
});

export type TokenEntry = z.output<typeof tokenEntrySchema>;

export const tokenListSchema = z.array(tokenEntrySchema).optional();
