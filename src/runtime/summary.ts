// Text shaping for what the runtime writes about a hook run: the main-session summary event
// (`Hook <name>: <reply>`). Log-safe text lives in src/text-safe.ts.
// Pure functions only: no I/O, no clock (only the event's id is random).

import { newId } from '../ids.js';
import { MAIN_SESSION_KEY, type NewSystemEvent, type Run } from '../store/types.js';
import { logSafe, NON_WHITESPACE_CONTROLS, truncateWithEllipsis } from '../text-safe.js';

/** Longest summary body (reply or error text), in UTF-16 code units, including the `…`. */
export const SUMMARY_MAX_CHARS = 2000;
/** Longest hook name kept in a summary line. */
export const SUMMARY_NAME_MAX_CHARS = 200;
/** Name used when the hook has none (or only whitespace/control characters). */
export const DEFAULT_HOOK_NAME = 'Hook';

const WHITESPACE_RUN = /\s+/g;

/**
 * Reply/error text for the summary: control characters (and LRM/RLM, bidi controls) removed, whitespace collapsed
 * (the whitespace controls are left for that step, so "a\nb" becomes "a b", not "ab"), trimmed, capped.
 */
function summaryBody(text: string): string {
  const flat = String(text).replace(NON_WHITESPACE_CONTROLS, '').replace(WHITESPACE_RUN, ' ').trim();
  return truncateWithEllipsis(flat, SUMMARY_MAX_CHARS);
}

/**
 * What an operator calls a run in lists (the dashboard, the live feed): the request's `name` when one was given,
 * else the mapping or preset that made it, else its hook sub-path (`agent`). `Hook` is the unnamed default, so it
 * names nothing.
 */
export function runLabel(run: Pick<Run, 'name' | 'mappingId' | 'hookPath'>): string {
  const name = logSafe(run.name ?? '', SUMMARY_NAME_MAX_CHARS);
  if (name !== '' && name !== DEFAULT_HOOK_NAME) return name;
  return run.mappingId || run.hookPath || 'agent';
}

/** The hook name as shown in a summary; falls back to `Hook` so the line never reads `Hook : …`. */
export function summaryHookName(name: string): string {
  const clean = logSafe(name ?? '', SUMMARY_NAME_MAX_CHARS);
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

/**
 * The summary as a main-session system event. The reply comes from a model that has just read the hook's untrusted
 * content (and obeyed it, if an injection worked), so the event is untrusted, named by the hook's name, unless the run
 * itself was allowed unsafe content: then it was trusted all along, and so is its summary.
 */
export function summaryEvent(
  run: Pick<Run, 'id' | 'name' | 'allowUnsafeExternalContent'>,
  text: string,
  agentId: string,
  at: number,
): NewSystemEvent {
  // One literal of one shape either way: `{ ...event, untrusted, source }` was defined property by property through
  // the runtime (two slow stores a run, and every later read of the event a megamorphic miss).
  const trusted = run.allowUnsafeExternalContent;
  return {
    id: newId(),
    sessionKey: MAIN_SESSION_KEY,
    agentId,
    text,
    origin: 'summary',
    runId: run.id,
    createdAt: at,
    untrusted: !trusted,
    source: trusted ? null : summaryHookName(run.name),
  };
}
