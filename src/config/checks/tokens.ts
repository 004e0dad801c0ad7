import { DEFAULT_TOKEN_ID, type TokenEntry } from '../schema/tokens.js';
import type { ConfigFindings } from './types.js';

/** One listener's credentials: the single `token` and the `tokens` list (`hooks.*` or `admin.*`). */
interface TokenSection {
  token?: string | undefined;
  tokens?: TokenEntry[] | undefined;
}

/** Tokens shorter than this are weak: warned about, and refused where a stranger can reach the listener. */
export const MIN_TOKEN_LENGTH = 16;

/** The warning for a weak token at `at` (a key path, with the entry's id when listed), naming no token. */
const weakTokenWarning = (at: string): string =>
  `${at} is shorter than ${MIN_TOKEN_LENGTH} characters: use \`hookgate token\` for a strong one`;

/**
 * The refusal of a weak admin token when the admin listener binds `bind`, which is not loopback: anyone who reaches
 * the port may guess it.
 */
const weakTokenRefusal = (bind: string): string =>
  `shorter than ${MIN_TOKEN_LENGTH} characters, and admin.bind (${bind}) is not loopback: make a strong one with \`hookgate token\` (or \`openssl rand -hex 32\`), or bind the admin listener to 127.0.0.1`;

/**
 * A weak token at key path `path` (a listed one's `id` is named too, never the token): an issue when `exposedOn`
 * names the non-loopback address its listener binds, else a warning; nothing for a strong one.
 */
export function judgeTokenStrength(
  out: ConfigFindings,
  path: string,
  token: string,
  exposedOn: string | undefined,
  id?: string,
): void {
  if (token.length >= MIN_TOKEN_LENGTH) return;
  const named = id === undefined ? '' : `(id "${id}") `;
  if (exposedOn === undefined) out.warnings.push(weakTokenWarning(`${path} ${named}`.trimEnd()));
  else out.issues.push({ path, message: `${named}${weakTokenRefusal(exposedOn)}` });
}

/** Whether the section has any token at all (expired ones count: the config is valid, the requests are refused). */
export const hasTokens = (s: TokenSection): boolean => Boolean(s.token) || (s.tokens?.length ?? 0) > 0;

/**
 * `<section>.tokens` against itself and `<section>.token`: unique ids (the single token's is "default"), no secret
 * listed twice (the record could not say which id it was). Warnings: short tokens (issues when `exposedOn` names the
 * non-loopback address the listener binds), expired entries, none usable. Problems name key paths and ids, never a token.
 */
export function checkTokenList(
  section: 'hooks' | 'admin',
  s: TokenSection,
  now: number,
  exposedOn?: string,
): ConfigFindings {
  const issues: ConfigFindings['issues'] = [];
  const warnings: string[] = [];
  const list = s.tokens ?? [];
  const idAt = new Map<string, string>();
  const secretAt = new Map<string, string>();
  if (s.token) {
    idAt.set(DEFAULT_TOKEN_ID, `${section}.token`);
    secretAt.set(s.token, `${section}.token`);
  }
  list.forEach((t, i) => {
    const at = `${section}.tokens[${i}]`;
    const sameId = idAt.get(t.id);
    if (sameId === `${section}.token`)
      issues.push({
        path: `${at}.id`,
        message: `"${DEFAULT_TOKEN_ID}" is the id of ${section}.token; choose another id`,
      });
    else if (sameId) issues.push({ path: `${at}.id`, message: `duplicate id "${t.id}" (also ${sameId})` });
    else idAt.set(t.id, at);
    const sameSecret = secretAt.get(t.token);
    if (sameSecret)
      issues.push({ path: `${at}.token`, message: `the same token as ${sameSecret}: each entry needs its own` });
    else secretAt.set(t.token, at);
    judgeTokenStrength({ issues, warnings }, `${at}.token`, t.token, exposedOn, t.id);
    if (t.notAfter !== undefined && t.notAfter <= now)
      warnings.push(`${at} (id "${t.id}") expired at ${new Date(t.notAfter).toISOString()} and is refused: remove it`);
  });
  if (!s.token && list.length > 0 && list.every((t) => t.notAfter !== undefined && t.notAfter <= now)) {
    warnings.push(
      `every entry of ${section}.tokens has expired: every request is refused with 401 until a token is added`,
    );
  }
  return { issues, warnings };
}

/** Every secret of a section (expired included), e.g. to refuse hook tokens on the admin listener. */
export const allSecrets = (s: TokenSection): string[] => [
  ...(s.token ? [s.token] : []),
  ...(s.tokens ?? []).map((t) => t.token),
];
