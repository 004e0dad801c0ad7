/**
 * The admin API's query strings, parsed and checked (pure): a bad value is 400 `invalid_query` naming the parameter.
 * A delivery state is named as everywhere else (`pending`, `sent`, `failed`); the older `delivered`, `dead` are accepted.
 */
import { AUDIT_KINDS } from '../audit.js';
import { DELIVERY_STATE_NAMES, RUN_STATES, type RunState, storedDeliveryState } from '../enums.js';
import type { AuditPageQuery } from '../store/audit-types.js';
import { invalidQuery } from '../errors.js';
import type { DeliveryPageQuery, ReceivedPageQuery, RunPageQuery } from '../store/pages.js';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;
/** Longer values are no key, path or cursor hookgate made. */
const MAX_VALUE_CHARS = 512;

/** One value of a parameter: absent → undefined; repeated, empty or overlong → invalid_query. */
export function single(query: URLSearchParams, name: string): string | undefined {
  const all = query.getAll(name);
  if (all.length === 0) return undefined;
  if (all.length > 1) throw invalidQuery(name, 'given more than once');
  const v = all[0]!;
  if (v === '') throw invalidQuery(name, 'empty');
  if (v.length > MAX_VALUE_CHARS) throw invalidQuery(name, `longer than ${MAX_VALUE_CHARS} characters`);
  return v;
}

export function parseLimit(query: URLSearchParams): number {
  const v = single(query, 'limit');
  if (v === undefined) return DEFAULT_LIMIT;
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > MAX_LIMIT)
    throw invalidQuery('limit', `an integer from 1 to ${MAX_LIMIT}`);
  return Number(v);
}

function oneOf<T extends string>(query: URLSearchParams, name: string, values: readonly T[]): T | undefined {
  const v = single(query, name);
  if (v === undefined) return undefined;
  if (!(values as readonly string[]).includes(v)) throw invalidQuery(name, `one of ${values.join(', ')}`);
  return v as T;
}

/** Parameters a list does not know are refused, so a typo (`?status=failed`) is not silently a list of everything. */
function onlyKnown(query: URLSearchParams, known: readonly string[]): void {
  for (const name of query.keys())
    if (!known.includes(name)) throw invalidQuery(name, `not a parameter of this list (${known.join(', ')})`);
}

function page(query: URLSearchParams): { limit: number; cursor?: string } {
  const cursor = single(query, 'cursor');
  return { limit: parseLimit(query), ...(cursor !== undefined ? { cursor } : {}) };
}

export function parseRunsQuery(query: URLSearchParams): RunPageQuery {
  onlyKnown(query, ['state', 'sessionKey', 'limit', 'cursor']);
  const state = oneOf<RunState>(query, 'state', RUN_STATES);
  const sessionKey = single(query, 'sessionKey');
  return { ...page(query), ...(state ? { state } : {}), ...(sessionKey !== undefined ? { sessionKey } : {}) };
}

export function parseDeliveriesQuery(query: URLSearchParams): DeliveryPageQuery {
  onlyKnown(query, ['state', 'channel', 'limit', 'cursor']);
  const word = single(query, 'state');
  const state = word === undefined ? undefined : storedDeliveryState(word);
  if (word !== undefined && state === undefined)
    throw invalidQuery('state', `one of ${DELIVERY_STATE_NAMES.join(', ')}`);
  const channel = single(query, 'channel');
  return { ...page(query), ...(state ? { state } : {}), ...(channel !== undefined ? { channel } : {}) };
}

export function parseReceivedQuery(query: URLSearchParams): ReceivedPageQuery {
  onlyKnown(query, ['outcome', 'path', 'limit', 'cursor']);
  const outcome = oneOf(query, 'outcome', ['accepted', 'rejected'] as const);
  const path = single(query, 'path');
  return {
    ...page(query),
    ...(outcome ? { outcome } : {}),
    ...(path !== undefined ? { path: normalisePath(path) } : {}),
  };
}

/** Records keep the hook sub-path (`wake`, `github/push`); `/wake` names it too. */
function normalisePath(path: string): string {
  return path.replace(/^\/+/, '');
}

/** `GET /api/v1/overview` takes no parameter: the figures are always of now and the last hour. */
export function parseOverviewQuery(query: URLSearchParams): void {
  onlyKnown(query, []);
}

/** `GET /api/v1/breakdown` takes no parameter: always the last hour, per minute. */
export function parseBreakdownQuery(query: URLSearchParams): void {
  onlyKnown(query, []);
}

export function parseSessionsQuery(query: URLSearchParams): { limit: number } {
  onlyKnown(query, ['limit']);
  return { limit: parseLimit(query) };
}

/** `GET /api/v1/audit`: `kind` one of the audit kinds, `since` epoch milliseconds or an ISO time. */
export function parseAuditQuery(query: URLSearchParams): AuditPageQuery {
  onlyKnown(query, ['kind', 'since', 'limit', 'cursor']);
  const kind = oneOf(query, 'kind', AUDIT_KINDS);
  const s = single(query, 'since');
  const since = s === undefined ? undefined : /^\d+$/.test(s) ? Number(s) : Date.parse(s);
  if (since !== undefined && !Number.isSafeInteger(since))
    throw invalidQuery('since', 'epoch milliseconds or an ISO time (2026-11-25T08:00:00Z)');
  return { ...page(query), ...(kind ? { kind } : {}), ...(since !== undefined ? { since } : {}) };
}
