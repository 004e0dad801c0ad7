/**
 * Per-route limits (`allowFrom`, `rateLimit`): on each mapping, and for the direct routes under `hooks.routes`
 * (docs/security.md, "Per-route limits"). Enforced by the ingress (src/ingress/route-limits.ts).
 */
import { z } from 'zod';
import { cidrProblem } from '../../cidr.js';
import { positiveInt } from './common.js';

/** Client addresses allowed (after `gateway.trustedProxies`): IPv4/IPv6 addresses or CIDR blocks. */
export const allowFromSchema = z
  .array(
    z
      .string()
      .trim()
      .superRefine((entry, ctx) => {
        const problem = cidrProblem(entry);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
  )
  .min(
    1,
    'an empty allowFrom would refuse every client: list addresses or CIDR blocks, or remove the key to allow any',
  );

/** A token bucket: `burst` requests at once, refilled at `perMinute`. */
export const rateLimitSchema = z.strictObject({
  perMinute: z.number().positive(),
  burst: positiveInt,
});

export const routeLimitsShape = {
  allowFrom: allowFromSchema.optional(),
  rateLimit: rateLimitSchema.optional(),
};

/** `hooks.routes`: the limits of the direct routes `/wake` and `/agent`. */
export const directRoutesSchema = z
  .strictObject({
    wake: z.strictObject(routeLimitsShape).optional(),
    agent: z.strictObject(routeLimitsShape).optional(),
  })
  .prefault({});

export type RouteLimitsConfig = z.output<z.ZodObject<typeof routeLimitsShape>>;
