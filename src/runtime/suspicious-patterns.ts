// Suspicious-pattern detection for hook messages: log only, never blocks, never alters the message.
//
// Patterns run on the folded view (external-content.ts) so fullwidth or zero-width-split phrases are still seen.
// All repetition is bounded or unambiguous so a hostile 256 KiB body cannot make detection slow.

import { logSafe } from '../text-safe.js';
import { foldForDetection, SPECIAL_TOKEN_SOURCE } from './external-content.js';

interface SuspiciousPattern {
  readonly name: string;
  readonly re: RegExp;
}

const SUSPICIOUS_PATTERNS: readonly SuspiciousPattern[] = [
  {
    name: 'ignore_previous_instructions',
    re: /\bignore\s+(?:all\s+)?(?:(?:the|any|your|of\s+the|of\s+your)\s+)?(?:previous|prior|above|earlier|preceding)\s+(?:instructions?|prompts?|directions?|rules?|messages?|context)\b/iu,
  },
  {
    name: 'disregard_previous',
    re: /\bdisregard\s+(?:all\s+)?(?:(?:the|any|your|of\s+the|of\s+your)\s+)?(?:previous|prior|above|earlier|preceding)\b/iu,
  },
  {
    name: 'forget_instructions',
    re: /\bforget\s+(?:(?:everything|all)\s+(?:you\s+(?:were|have\s+been|'ve\s+been)\s+told|above|before|previously|(?:(?:of\s+)?(?:your|the|previous|prior|earlier)\s+)?(?:instructions?|rules?|guidelines?|prompts?))|(?:your|the|any|previous|prior)\s+(?:(?:previous|prior|earlier|original)\s+)?(?:instructions?|rules?|guidelines?|prompts?|programming|training))\b/iu,
  },
  {
    name: 'you_are_now',
    re: /\byou(?:\s+are|'re)\s+now\s+(?:an?|the|my|acting\s+as|no\s+longer|in\s+[a-z]{1,20}\s+mode)\b/iu,
  },
  { name: 'new_instructions', re: /\b(?:new|updated|revised|real)\s+(?:system\s+)?instructions?\s*:/iu },
  { name: 'system_prompt_override', re: /\bsystem[\s_-]{0,4}(?:prompt|override|command)s?\b/iu },
  { name: 'exec_command', re: /\bexec\b[^\n]{0,200}?\bcommand\s*=/iu },
  { name: 'elevated_true', re: /\belevated\s{0,4}[=:]\s{0,4}["']?true\b/iu },
  {
    name: 'rm_rf',
    re: /\brm\s+(?:-[a-z]{0,6}(?:rf|fr)|-r\s+-f|-f\s+-r|--recursive\s+--force|--force\s+--recursive)/iu,
  },
  {
    name: 'delete_all',
    re: /\b(?:delete|erase|wipe|remove)\s+all\s+(?:(?:of\s+)?(?:the|my|your|their|his|her|our)\s+)?(?:e-?mails?|files?|data|messages?|records?|documents?|contacts?|backups?|users?|repos|repositories)\b/iu,
  },
  { name: 'system_tag', re: /<\s{0,8}\/?\s{0,8}system(?:[_-][a-z_-]{0,30})?\s{0,8}>/iu },
  { name: 'role_label_injection', re: /\][ \t]*\r?\n[ \t]*\[?(?:system|assistant|user|developer)\]?[ \t]*:/iu },
  {
    name: 'bracketed_role',
    re: /\[[ \t]{0,8}(?:system(?:[ \t]+message)?|assistant|internal|developer|admin(?:istrator)?)[ \t]{0,8}\]/iu,
  },
  { name: 'system_line', re: /^[ \t]*system[ \t]*:/imu },
  // Also worth a log line even though the wrapper neutralises them: content that imitates our boundary or a
  // chat template's turn delimiters is a deliberate injection attempt, not an accident.
  { name: 'boundary_marker_spoof', re: /external_untrusted_content/iu },
  { name: 'special_token', re: new RegExp(SPECIAL_TOKEN_SOURCE, 'iu') },
];

/** Every name `detectSuspiciousPatterns` can return, in the order it returns them. */
export const SUSPICIOUS_PATTERN_NAMES: readonly string[] = SUSPICIOUS_PATTERNS.map((p) => p.name);

/**
 * Names of the suspicious patterns found in `content` (case-insensitive, on the folded view), in a stable
 * order, each at most once. Returns identifiers only, never matched text, so the result is safe to log.
 */
export function detectSuspiciousPatterns(content: string): string[] {
  const folded = foldForDetection(String(content));
  const names: string[] = [];
  for (const { name, re } of SUSPICIOUS_PATTERNS) {
    if (re.test(folded)) names.push(name);
  }
  return names;
}

/**
 * The warn line for detected patterns: session key (sanitised for logs) and the pattern names only. The
 * content itself never goes to the log; it may carry personal data and is attacker-controlled.
 */
export function suspiciousPatternLogLine(sessionKey: string, names: readonly string[]): string {
  return `[security] suspicious patterns in external hook content (session=${logSafe(sessionKey, 200)}, patterns=${names.length}): ${names.join(', ')}`;
}
