/**
 * PostgreSQL connection URLs (`storage.url`, `hookgate store copy --to`): what makes one usable, and how to scrub its
 * password from a driver's message. Shown to people through `safeUrl` (text-safe.ts), like every configured URL.
 */
import { safeUrl } from '../text-safe.js';

const SCHEMES = new Set(['postgres:', 'postgresql:']);
const EXAMPLE = 'postgres://user:password@host:5432/database';

/** Why `url` cannot name a PostgreSQL database, or undefined when it can. The message never quotes the URL. */
export function databaseUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `must be a PostgreSQL URL like ${EXAMPLE}`;
  }
  if (!SCHEMES.has(u.protocol)) {
    // The scheme alone is safe to show (a password never sits before "://").
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.test(u.protocol) ? ` (got "${u.protocol}//")` : '';
    return `must start with postgres:// or postgresql://${scheme}, like ${EXAMPLE}`;
  }
  // libpq's form for a Unix socket, postgres:///db?host=/run/postgresql, names the host in the query.
  if (!u.hostname && !u.searchParams.get('host')) return `names no host: write it after "//", like ${EXAMPLE}`;
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!database) return `names no database: add "/<database>" after the host, like ${EXAMPLE}`;
  if (database.includes('/')) return 'the database name (after the host) may not contain "/"';
  return undefined;
}

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url.trim());
}

/** Every form the password of `url` may take in a message (raw and percent-decoded), to scrub it from errors. */
export function secretsOfUrl(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [url];
  }
  const out = new Set<string>();
  const add = (s: string) => s && out.add(s);
  add(u.password);
  try {
    add(decodeURIComponent(u.password));
  } catch {
    /* not decodable: the raw form is enough */
  }
  for (const [key, value] of u.searchParams) if (/pass|secret|key$/i.test(key)) add(value);
  add(url);
  return [...out].sort((a, b) => b.length - a.length);
}

/** `text` with every form of `url`'s password replaced by `***` (for error messages from a driver or a server). */
export function scrubUrlSecrets(text: string, url: string): string {
  let out = text;
  for (const s of secretsOfUrl(url)) out = out.split(s).join(s === url ? safeUrl(url) : '***');
  return out;
}
