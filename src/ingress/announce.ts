/**
 * The ingress's announcements on the live feed (src/feed.ts): one `received` event per answered hook request,
 * accepted or refused (401s and lockouts included: the store aggregates refusals into windows, the feed shows each,
 * bounded by its ring buffer). One small object per request; nothing is read or serialized here.
 */
import { performance } from 'node:perf_hooks';
import type { HooksConfig } from '../config/schema/hooks.js';
import type { FeedSink } from '../feed.js';
import { allMappings } from '../hooks/mappings/presets/index.js';
import { logPath } from '../text-safe.js';

/** Ids listed per event at most (a fan-out of 200 runs would make one event of 8 KB): the rest are counted. */
export const FEED_MAX_IDS = 20;

const mappingRoutes = new WeakMap<HooksConfig, ReadonlyMap<string, string>>();

/**
 * The `route` of a request: `wake`, `agent`, the id of the mapping that took it (or, when none did yet, the first
 * mapping whose path is exactly this sub-path), else `other`. Bounded by the config, never the raw path: a stranger
 * probing random paths adds no label value.
 */
export function routeLabel(hooks: HooksConfig, subPath: string, mappingId: string | null): string {
  if (mappingId) return mappingId;
  if (subPath === 'wake' || subPath === 'agent') return subPath;
  let byPath = mappingRoutes.get(hooks);
  if (!byPath) {
    const m = new Map<string, string>();
    allMappings(hooks).forEach((mapping, i) => {
      const p = mapping.match?.path;
      // the id the mapping compiles to (hooks/mappings/compile.ts); presets carry theirs
      if (p && !m.has(p)) m.set(p, mapping.id ?? `mapping-${i + 1}`);
    });
    mappingRoutes.set(hooks, (byPath = m));
  }
  return byPath.get(subPath) ?? 'other';
}

export interface Answered {
  hooks: HooksConfig;
  subPath: string;
  clientIp: string;
  reqId: string;
  /** performance.now() at the request's start. */
  started: number;
  at: number;
  status: number;
  code: string | null;
  mappingId: string | null;
  /** An accepted answer's body: its ids are announced. */
  body?: Record<string, unknown>;
}

function ids(value: unknown, single: unknown): string[] {
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return typeof single === 'string' ? [single] : [];
}

/** Announce one answered request (nothing when no feed is wired: tests, embedding). */
export function announceReceived(feed: FeedSink | undefined, a: Answered): void {
  if (!feed) return;
  let eventIds = a.body ? ids(a.body.eventIds, a.body.eventId) : [];
  let runIds = a.body ? ids(a.body.runIds, a.body.runId) : [];
  let omitted = 0;
  if (eventIds.length + runIds.length > FEED_MAX_IDS) {
    omitted = eventIds.length + runIds.length - FEED_MAX_IDS;
    eventIds = eventIds.slice(0, FEED_MAX_IDS);
    runIds = runIds.slice(0, FEED_MAX_IDS - eventIds.length);
  }
  feed.publish({
    type: 'received',
    at: a.at,
    // A stranger picks the path: printable and bounded here (the store's record keeps it as it came).
    path: logPath(a.subPath, 200),
    route: routeLabel(a.hooks, a.subPath, a.mappingId),
    status: a.status,
    code: a.code,
    clientIp: a.clientIp,
    eventIds,
    runIds,
    ...(omitted ? { omittedIds: omitted } : {}),
    durationMs: Math.round((performance.now() - a.started) * 1000) / 1000, // to the µs: a shorter frame
    reqId: a.reqId,
  });
}
