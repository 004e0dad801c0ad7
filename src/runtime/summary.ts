// Text shaping for what the runtime writes about a hook run: the main-session summary event
// (`Hook <name>: <reply>`) and the sanitiser the logger applies to any payload-derived text.
// Pure functions only: no I/O, no clock, no randomness.

/** Longest summary body (reply or error text), in UTF-16 code units, including the `…`. */
export const SUMMARY_MAX_CHARS = 2000;
/** Longest hook name kept in a summary line. */
export const SUMMARY_NAME_MAX_CHARS = 200;
/** Name used when the hook has none (or only whitespace/control characters). */
export const DEFAULT_HOOK_NAME = 'Hook';

const ELLIPSIS = '…';

// C0 controls except the whitespace ones (\t \n \v \f \r), DEL and C1 controls. These carry no meaning in a
// one-line summary and some of them (ESC, NUL) are hazards for terminals and downstream tools, so they are
// dropped; the whitespace controls are left for the collapse step so "a\nb" becomes "a b", not "ab".
const NON_WHITESPACE_CONTROLS = /[\u0000-\u0008\u000E-\u001F\u007F-\u009F]/g;

// For logs every control character becomes a space (so log lines cannot be split or recoloured), and so do
// the Unicode line/paragraph separators and the bidi embedding/override/isolate controls, which can make a
// log line display differently from what it contains ("Trojan Source" style spoofing).
const LOG_UNSAFE = /[\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;

const WHITESPACE_RUN = /\s+/g;

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
 * Makes payload-derived text safe for one log line: control characters (and line separators, bidi
 * overrides) → space, whitespace runs collapsed, trimmed, at most `max` UTF-16 units with `…`.
 * The logger should call this on anything that came from a request (hook names, session keys,
 * error messages that quote input); redaction of secrets, if any, must happen before this call.
 */
export function sanitizeForLog(text: string, max = 500): string {
  const flat = String(text).replace(LOG_UNSAFE, ' ').replace(WHITESPACE_RUN, ' ').trim();
  return truncateWithEllipsis(flat, max);
}

/** Reply/error text for the summary: control characters removed, whitespace collapsed, trimmed, capped. */
function summaryBody(text: string): string {
  const flat = String(text).replace(NON_WHITESPACE_CONTROLS, '').replace(WHITESPACE_RUN, ' ').trim();
  return truncateWithEllipsis(flat, SUMMARY_MAX_CHARS);
}

/** The hook name as shown in a summary; falls back to `Hook` so the line never reads `Hook : …`. */
export function summaryHookName(name: string): string {
  const clean = sanitizeForLog(name ?? '', SUMMARY_NAME_MAX_CHARS);
  return clean === '' ? DEFAULT_HOOK_NAME : clean;
}

export type HookOutcome = { ok: true; reply: string } | { ok: false; error: string };

/**
 * The main-session system event written after every hook agent run:
 * `Hook <name>: <reply>` for a successful run (`(no reply)` when it produced no text), or
 * `Hook <name> (error): <why>` for a failed one. The text is flattened to one line because the event is
 * a terse notice in the main agent's prompt, not the reply itself (that goes out through delivery).
 */
export function hookSummary(name: string, outcome: HookOutcome): string {
  const hook = summaryHookName(name);
  if (outcome.ok) {
    const body = summaryBody(outcome.reply ?? '');
    return `Hook ${hook}: ${body === '' ? '(no reply)' : body}`;
  }
  const why = summaryBody(outcome.error ?? '');
  return `Hook ${hook} (error): ${why === '' ? 'unknown error' : why}`;
}
