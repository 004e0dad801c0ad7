/**
 * The one home for text that leaves the process in a log line, an error message, a dead-letter record or a terminal
 * cell. Everything that came from outside (payload fields, hook names, session keys, a platform's or a child
 * process's words, error messages that quote their input) goes through one of these before it is written.
 * Pure functions only.
 */

/**
 * Every character that can split, recolour or visually reorder a line: C0 controls, DEL, C1 controls, the Unicode
 * line/paragraph separators, the left-to-right/right-to-left marks and the bidi embedding/override/isolate controls
 * ("Trojan Source" style spoofing).
 */
export const LINE_UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** The same set, without the whitespace controls (\t \n \v \f \r): for text whose line breaks are collapsed later. */
export const NON_WHITESPACE_CONTROLS =
  /[\u0000-\u0008\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const WHITESPACE_RUN = /\s+/g;
const ELLIPSIS = '…';

/**
 * Cuts `text` to at most `max` UTF-16 code units, the last of which is `…` when anything was cut.
 * Never leaves half of a surrogate pair at the cut: a lone high surrogate would render as U+FFFD and
 * make the string invalid UTF-8 for JSON/log consumers.
 */
export function truncateWithEllipsis(text: string, max: number): string {
  const limit = Number.isFinite(max) ? Math.floor(max) : max === Infinity ? Infinity : 0;
  if (limit <= 0) return '';
  if (text.length <= limit) return text;
  let cut = limit - 1; // room for the ellipsis
  if (cut > 0) {
    const last = text.charCodeAt(cut - 1);
    if (last >= 0xd800 && last <= 0xdbff) cut -= 1; // keep the pair whole by dropping both halves
  }
  return text.slice(0, cut) + ELLIPSIS;
}

/**
 * One safe line: every unsafe character → space, whitespace runs collapsed, trimmed, at most `max` UTF-16 units
 * with `…`. Redaction of secrets, if any, must happen before this call (`redactSecrets`).
 */
export function logSafe(text: string, max = 500): string {
  const flat = String(text).replace(LINE_UNSAFE, ' ').replace(WHITESPACE_RUN, ' ').trim();
  return truncateWithEllipsis(flat, max);
}

/**
 * Text shown on a terminal as it is, several lines allowed: line breaks kept (a CR alone becomes one: it would let
 * the text overwrite what was printed before it), tabs kept, every other control character (escape sequences that
 * recolour, move the cursor or retitle the window) and the bidi controls removed.
 */
export function terminalSafe(text: string): string {
  return String(text)
    .replace(/\r\n?/g, '\n')
    .replace(/[\v\f\u2028\u2029]/g, '\n')
    .replace(NON_WHITESPACE_CONTROLS, '');
}

/** `logSafe` for an optional value: a non-string or a blank result is `undefined`. */
export function logSafeOptional(value: unknown, max = 200): string | undefined {
  if (typeof value !== 'string') return undefined;
  const safe = logSafe(value, max);
  return safe === '' ? undefined : safe;
}

/** The message of anything thrown. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** What kind of value `v` is, for error messages: never the value itself. */
export function describeKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/**
 * A short identifier from a thrown value (its class name, its `code` property) for a log line, or `undefined` when it
 * is not one: only `[A-Za-z0-9_.$-]`, at most 64 characters, starting with a letter. Anything else could be data (a
 * transform may build an error's name or code from its input), so it is dropped rather than cleaned.
 */
export function identifierOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' && /^[A-Za-z][A-Za-z0-9_.$-]{0,63}$/.test(value) ? value : undefined;
}

/** The first line of a thrown value's message, made log-safe and bounded. */
export function firstLine(err: unknown, max = 200): string {
  return logSafe(errorMessage(err).split('\n')[0] ?? '', max);
}

/** A request sub-path for a log line: printable ASCII only (it comes from the request line), bounded. */
export function logPath(subPath: string, max = 100): string {
  return truncateWithEllipsis(subPath.replace(/[^\x21-\x7e]/g, '?'), max);
}

/**
 * Masks known secrets and anything shaped like an API key or bearer token, then makes the text one safe line.
 * For error messages built from what a server or a child process said.
 */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined>, max = 200): string {
  let out = text;
  // Longest first, so a secret that contains another is masked whole.
  const known = secrets.filter((s): s is string => !!s && s.length >= 4).sort((a, b) => b.length - a.length);
  for (const s of known) out = out.split(s).join('[redacted]');
  out = out
    .replace(/\b(?:sk|pk|rk)-[A-Za-z0-9_*.-]{6,}/g, '[redacted]')
    .replace(/\b(Bearer|Basic)\s+[^\s"',]+/gi, '$1 [redacted]');
  return logSafe(out, max);
}

/** What a masked part of a URL is shown as. */
export const URL_MASK = '***';

/**
 * Path names after which every segment is a credential, whatever its shape: Slack (`/services/T…/B…/<secret>`),
 * Discord and most "incoming webhook" services (`/webhooks/<id>/<token>`), Teams (`/webhookb2/…`), Zapier
 * (`/hooks/catch/<id>/<secret>`).
 */
const SECRET_PATH_AFTER = new Set(['services', 'webhooks', 'webhookb2', 'catch']);

/**
 * Whether a URL part looks like a credential rather than a name: 20 characters or more, or 12 or more mixing letters
 * and digits (`PATHSECRET456`, a Telegram `bot123:AA…`, a uuid). Short words (`v1`, `api`, `IncomingWebhook`) show.
 */
export function credentialLike(part: string): boolean {
  return part.length >= 20 || (part.length >= 12 && /[0-9]/.test(part) && /[A-Za-z]/.test(part));
}

/**
 * A configured URL made safe to show (docs/security.md, "Secrets in URLs"): the scheme, host and port stay; the
 * userinfo password is masked (the user name too when it looks like a credential); every query value is masked, its
 * name kept (`?key=***&sig=***`); a path segment is masked when it looks like a credential (`credentialLike`) or
 * follows a known webhook path (`/services/`, `/webhooks/`, `/webhookb2/`, `/hooks/catch/`); a fragment is masked.
 * A string that does not parse is not shown at all.
 */
export function safeUrl(url: string): string {
  const text = url.trim();
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return '(a URL that does not parse)';
  }
  const mask = (part: string) => (credentialLike(part) ? URL_MASK : part);
  const user = u.username
    ? `${mask(u.username)}${u.password ? `:${URL_MASK}` : ''}@`
    : u.password
      ? `:${URL_MASK}@`
      : '';
  let secretFromHere = false;
  const path = u.pathname
    .split('/')
    .map((segment) => {
      const shown = segment === '' ? segment : secretFromHere ? URL_MASK : mask(segment);
      if (SECRET_PATH_AFTER.has(segment.toLowerCase())) secretFromHere = true;
      return shown;
    })
    .join('/');
  const query = u.search
    .slice(1)
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const eq = pair.indexOf('=');
      return eq < 0 ? mask(pair) : `${mask(pair.slice(0, eq))}=${URL_MASK}`;
    })
    .join('&');
  // `postgres:///db` has an empty authority, which must stay: without it `db` would read as a host.
  const authority = text.slice(u.protocol.length).startsWith('//') ? `//${user}${u.host}` : '';
  return `${u.protocol}${authority}${path}${query ? `?${query}` : ''}${u.hash ? `#${URL_MASK}` : ''}`;
}

/** Every `scheme://…` URL inside `text` put through `safeUrl`; the rest of the text unchanged. */
export function maskUrlsIn(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi, (url) => safeUrl(url));
}
