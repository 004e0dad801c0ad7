import { isOneOf, SESSION_MODES, WAKE_MODES } from '../enums.js';
import { HttpError } from '../errors.js';
import { logSafe } from '../text-safe.js';
import type { SessionMode, WakeMode } from '../store/types.js';

/** A wake request after validation. */
export interface WakeRequest {
  text: string;
  mode: WakeMode;
  /** A session other than the main one; the same policy as an agent request's key decides whether it is allowed. */
  sessionKey: string | undefined;
  /** Checked against the configured agents and the allowlist; the event goes to the main session all the same. */
  agentId: string | undefined;
}

/** An agent request after validation, before policy (agent, session, model, channel). */
export interface AgentRequest {
  message: string;
  name: string;
  agentId: string | undefined;
  sessionKey: string | undefined;
  sessionMode: SessionMode;
  wakeMode: WakeMode;
  deliver: boolean;
  channel: string;
  to: string | undefined;
  /** A named account of `channel`; checked (case-insensitively) against the configured accounts by the policy. */
  accountId: string | undefined;
  model: string | undefined;
  thinking: string | undefined;
  timeoutSeconds: number | undefined;
}

type Payload = Record<string, unknown>;

/** The fields each direct route reads (`idempotencyKey` is read by the idempotency step). */
export const WAKE_FIELDS: ReadonlySet<string> = new Set(['text', 'mode', 'sessionKey', 'agentId', 'idempotencyKey']);
export const AGENT_FIELDS: ReadonlySet<string> = new Set([
  'message',
  'name',
  'agentId',
  'sessionKey',
  'sessionMode',
  'wakeMode',
  'deliver',
  'channel',
  'to',
  'accountId',
  'model',
  'thinking',
  'timeoutSeconds',
  'waitForCompletion',
  'idempotencyKey',
]);
const MAX_UNKNOWN_FIELDS = 20;
const MAX_FIELD_NAME = 64;

/**
 * The top-level keys of a direct request that hookgate does not read: accepted (as OpenClaw accepts them), but
 * listed in the received record and logged at debug, so a misspelt `sesionKey` is findable. Bounded: at most 20
 * names of at most 64 characters. Undefined when there are none (the usual case costs one pass over the keys).
 */
export function unknownFields(p: Payload, known: ReadonlySet<string>): string[] | undefined {
  let out: string[] | undefined;
  for (const key of Object.keys(p)) {
    if (known.has(key)) continue;
    (out ??= []).push(logSafe(key, MAX_FIELD_NAME));
    if (out.length === MAX_UNKNOWN_FIELDS) break;
  }
  return out;
}

const bad = (message: string) => new HttpError(400, 'invalid_payload', message);

// The fields are read by name (`p.text`), each value then checked by a helper that takes the value: a helper that
// read `p[key]` for every key of both routes made that load megamorphic on every wake and agent request.

export function normalizeWake(p: Payload): WakeRequest {
  return {
    text: requiredTextOf(p.text, 'text'),
    mode: parseWakeMode(p.mode, 'mode'),
    sessionKey: wakeSessionKey(p.sessionKey),
    agentId: stringOf(p.agentId, 'agentId'),
  };
}

/** A wake's `sessionKey`, when sent, names a session: a blank one is refused (as OpenClaw does), not read as absent. */
function wakeSessionKey(v: unknown): string | undefined {
  if (typeof v === 'string' && v.trim() === '') throw bad('sessionKey must be a non-empty string when sent');
  return stringOf(v, 'sessionKey');
}

export function normalizeAgent(p: Payload): AgentRequest {
  return {
    message: requiredTextOf(p.message, 'message'),
    name: stringOf(p.name, 'name') ?? 'Hook',
    agentId: stringOf(p.agentId, 'agentId'),
    sessionKey: stringOf(p.sessionKey, 'sessionKey'),
    sessionMode: sessionMode(p.sessionMode),
    wakeMode: parseWakeMode(p.wakeMode, 'wakeMode'),
    deliver: booleanOf(p.deliver, 'deliver') ?? true,
    channel: stringOf(p.channel, 'channel') ?? 'last',
    to: stringOf(p.to, 'to'),
    accountId: accountId(p.accountId),
    model: modelOverride(p.model),
    thinking: stringOf(p.thinking, 'thinking'),
    timeoutSeconds: timeoutSeconds(p.timeoutSeconds),
  };
}

/**
 * `waitForCompletion` of a direct `/agent` request (OpenClaw's field): hold the answer until the run ends. Apart
 * from `AgentRequest`, because mappings never take it (see routes.ts).
 */
export function waitForCompletion(p: Payload): boolean {
  return booleanOf(p.waitForCompletion, 'waitForCompletion') ?? false;
}

function requiredTextOf(v: unknown, key: string): string {
  const t = typeof v === 'string' ? v.trim() : '';
  if (t === '') throw bad(`${key} required: a non-empty string`);
  return t;
}

/** Absent or blank → undefined; a non-string is an error (no silent coercion of `123` or `true`). */
export function optionalString(p: Payload, key: string): string | undefined {
  return stringOf(p[key], key);
}

/** `optionalString` of the value of `key`. */
function stringOf(v: unknown, key: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw bad(`${key} must be a string`);
  const t = v.trim();
  return t === '' ? undefined : t;
}

export function optionalBoolean(p: Payload, key: string): boolean | undefined {
  return booleanOf(p[key], key);
}

function booleanOf(v: unknown, key: string): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(`${key} must be true or false`);
  return v;
}

export function parseWakeMode(v: unknown, key: string): WakeMode {
  if (v === undefined || v === null) return 'now';
  if (isOneOf(WAKE_MODES, v)) return v;
  throw bad(`${key} must be "now" or "next-heartbeat"`);
}

export function sessionMode(v: unknown): SessionMode {
  if (v === undefined || v === null) return 'isolated';
  if (isOneOf(SESSION_MODES, v)) return v;
  throw bad('sessionMode must be "isolated" or "persistent"');
}

function modelOverride(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  const t = typeof v === 'string' ? v.trim() : '';
  if (t === '') throw bad('model required: a non-empty <provider>/<model> or alias when given');
  return t;
}

/** Absent → undefined; when present it must be a non-blank string: a sender's account choice is never dropped. */
export function accountId(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  const t = typeof v === 'string' ? v.trim() : '';
  if (t === '') throw bad("accountId must be a non-empty string: the id of one of the channel's accounts");
  return t;
}

export function timeoutSeconds(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw bad('timeoutSeconds must be a positive number');
  return v;
}
