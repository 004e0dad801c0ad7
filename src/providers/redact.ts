/** Keeps credentials out of error messages built from what a server or a child process said. */

export const MAX_REASON_CHARS = 200;

/** Masks known secrets and anything shaped like an API key or bearer token, strips control chars, bounds length. */
export function redact(text: string, secrets: ReadonlyArray<string | undefined>, max = MAX_REASON_CHARS): string {
  let out = text;
  // Longest first, so a secret that contains another is masked whole.
  const known = secrets.filter((s): s is string => !!s && s.length >= 4).sort((a, b) => b.length - a.length);
  for (const s of known) out = out.split(s).join('[redacted]');
  out = out
    .replace(/\b(?:sk|pk|rk)-[A-Za-z0-9_*.-]{6,}/g, '[redacted]')
    .replace(/\b(Bearer|Basic)\s+[^\s"',]+/gi, '$1 [redacted]')
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return out.length > max ? `${out.slice(0, max - 1)}…` : out;
}
