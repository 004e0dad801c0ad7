import { z } from 'zod';

/** The account a platform's top-level section is; `accountId: "default"` in a request names it explicitly. */
export const DEFAULT_ACCOUNT_ID = 'default';
/** Account ids: lower-case letters, digits, `-` and `_` (they appear in requests, logs and the store). */
export const ACCOUNT_ID_RE = /^[a-z0-9_-]+$/;

/** A core platform's section: its own fields (the default account) plus its named accounts, each already merged. */
export type WithAccounts<T> = T & { readonly accounts: Readonly<Record<string, T>> };

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A platform schema that also takes `accounts: { <id>: { ...overrides } }`. Each account is the top-level section
 * with the account's fields laid over it (an override of `null` drops the inherited key, for fields that exclude
 * each other), and the result must pass the same strict platform schema; its problems are reported under
 * `accounts.<id>.<key>`. Secrets are interpolated before this runs, so `${ENV}`/`{env}`/`{file}` work inside accounts.
 */
export function withAccounts<S extends z.ZodType<object>>(platform: S) {
  return z.unknown().transform((raw, ctx): WithAccounts<z.output<S>> => {
    const forward = (issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[]) => {
      // Re-raised as they are (code, keys...), only placed under the account's path.
      for (const i of issues)
        ctx.addIssue({ ...i, path: [...prefix, ...i.path] } as Parameters<typeof ctx.addIssue>[0]);
    };
    if (!isPlainObject(raw)) {
      const r = platform.safeParse(raw);
      if (!r.success) forward(r.error.issues, []);
      return z.NEVER;
    }
    const { accounts, ...base } = raw;
    const top = platform.safeParse(base);
    if (!top.success) forward(top.error.issues, []);
    // A problem of the top level is inherited by every account that does not override it: named once, at the top.
    const topProblems = new Set(top.success ? [] : top.error.issues.map((i) => `${i.path.join('.')}\0${i.message}`));
    const merged: Record<string, z.output<S>> = {};
    if (accounts !== undefined && !isPlainObject(accounts)) {
      ctx.addIssue({
        code: 'custom',
        path: ['accounts'],
        message: 'must be an object: { <account id>: { ...fields that differ from the top level } }',
      });
    } else {
      for (const [id, override] of Object.entries(accounts ?? {})) {
        const at = ['accounts', id];
        if (!ACCOUNT_ID_RE.test(id)) {
          ctx.addIssue({ code: 'custom', path: at, message: 'account ids are lower-case letters, digits, - and _' });
          continue;
        }
        if (id === DEFAULT_ACCOUNT_ID) {
          ctx.addIssue({
            code: 'custom',
            path: at,
            message: 'the top-level section is the default account; give this account another id',
          });
          continue;
        }
        if (!isPlainObject(override)) {
          ctx.addIssue({
            code: 'custom',
            path: at,
            message: 'must be an object of the fields that differ from the top level',
          });
          continue;
        }
        const fields: Record<string, unknown> = { ...base };
        for (const [k, v] of Object.entries(override)) {
          if (v === null) delete fields[k];
          else fields[k] = v;
        }
        const r = platform.safeParse(fields);
        if (r.success) merged[id] = r.data;
        else
          forward(
            r.error.issues.filter((i) => !topProblems.has(`${i.path.join('.')}\0${i.message}`)),
            at,
          );
      }
    }
    if (!top.success) return z.NEVER;
    return { ...top.data, accounts: merged };
  });
}
