/**
 * What one `hookgate doctor` check found. Channels and providers answer their own "who am I" / "are you there"
 * question next to their send code (an optional `check` on their interface) and return this; the CLI prints it.
 */
import type { CheckStatus } from './enums.js';

export interface CheckResult {
  status: CheckStatus;
  /** What was found, for people: never a token, a password or a URL that carries one. */
  detail: string;
  /** What to change, when the status is not ok (e.g. "check botToken (from @BotFather)"). */
  fix?: string;
}

export const checkOk = (detail: string): CheckResult => ({ status: 'ok', detail });
export const checkWarn = (detail: string, fix?: string): CheckResult =>
  fix ? { status: 'warn', detail, fix } : { status: 'warn', detail };
export const checkFail = (detail: string, fix?: string): CheckResult =>
  fix ? { status: 'fail', detail, fix } : { status: 'fail', detail };

/** Each check's time limit: a hung endpoint must not hang the doctor. */
export const CHECK_TIMEOUT_MS = 5000;
