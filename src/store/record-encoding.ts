/**
 * Row → object decoding and the JSON encodings of stored records, shared by both drivers: their tables have the same
 * columns (docs/schema.md), PostgreSQL's bigint is parsed to a number (postgres-connect.ts), and 0/1 booleans are
 * integers on both. The PostgreSQL inserts' object → row encoding is postgres-rows.ts.
 */
import { countRunsOf } from './own-session.js';
import type {
  Delivery,
  ReceivedCode,
  ReceivedHook,
  RefusalCount,
  RefusalWindow,
  NodeInfo,
  Run,
  SessionMessage,
  SessionRoute,
  SessionSummary,
  SystemEvent,
} from './types.js';

export type Row = Record<string, unknown>;

export function rowToRun(r: Row): Run {
  return {
    id: r.id as string,
    state: r.state as Run['state'],
    agentId: r.agent_id as string,
    sessionKey: r.session_key as string,
    sessionMode: r.session_mode as Run['sessionMode'],
    name: r.name as string,
    message: r.message as string,
    wakeMode: r.wake_mode as Run['wakeMode'],
    deliver: r.deliver === 1,
    channel: r.channel as string,
    to: (r.recipient as string | null) ?? null,
    accountId: (r.account_id as string | null) ?? null,
    model: (r.model as string | null) ?? null,
    thinking: (r.thinking as string | null) ?? null,
    timeoutSeconds: r.timeout_seconds as number,
    allowUnsafeExternalContent: r.allow_unsafe === 1,
    contentSource: r.content_source as Run['contentSource'],
    hookPath: r.hook_path as string,
    mappingId: (r.mapping_id as string | null) ?? null,
    createdAt: r.created_at as number,
    updatedAt: r.updated_at as number,
    startedAt: (r.started_at as number | null) ?? null,
    finishedAt: (r.finished_at as number | null) ?? null,
    attempts: r.attempts as number,
    retries: (r.retries as number | null) ?? 0,
    retryingSince: (r.retrying_since as number | null) ?? null,
    nextAttemptAt: (r.next_attempt_at as number | null) ?? null,
    error: (r.error as string | null) ?? null,
    reply: (r.reply as string | null) ?? null,
    deliveryStatus: (r.delivery_status as string | null) ?? null,
    node: (r.node as string | null) ?? null,
  };
}

export function rowToEvent(r: Row): SystemEvent {
  return {
    id: r.id as string,
    sessionKey: r.session_key as string,
    agentId: r.agent_id as string,
    text: r.text as string,
    origin: r.origin as SystemEvent['origin'],
    runId: (r.run_id as string | null) ?? null,
    createdAt: r.created_at as number,
    consumedAt: (r.consumed_at as number | null) ?? null,
    untrusted: Number(r.untrusted) === 1,
    source: (r.source as string | null) ?? null,
  };
}

/**
 * The sessions list, newest activity first, in SQL both drivers run (`limit` is the driver's placeholder): a session
 * is any key with runs, events or a route. The newest `limit` keys are chosen first and only theirs are counted and
 * joined to their route: counted per key before the cut, a store of 500,000 runs' own sessions took 1.5 s a list.
 */
export function listSessionsSql(limit: '?' | '$1'): string {
  return `WITH activity AS (
       SELECT session_key AS key, agent_id, created_at FROM runs
       UNION ALL SELECT session_key, agent_id, created_at FROM system_events
       UNION ALL SELECT key, agent_id, updated_at FROM sessions),
     newest AS (
       SELECT key, MIN(agent_id) AS agent_id, MAX(created_at) AS last_at FROM activity
       GROUP BY key ORDER BY last_at DESC LIMIT ${limit})
     SELECT n.key, n.agent_id, n.last_at,
       (SELECT COUNT(*) FROM system_events e WHERE e.session_key = n.key AND e.consumed_at IS NULL) AS pending,
       ${countRunsOf('n.key')} AS runs,
       s.last_channel, s.last_to, s.last_account_id
     FROM newest n LEFT JOIN sessions s ON s.key = n.key
     ORDER BY n.last_at DESC`;
}

export function rowToSessionSummary(r: Row): SessionSummary {
  return {
    key: r.key as string,
    agentId: r.agent_id as string,
    pendingEvents: r.pending as number,
    runs: r.runs as number,
    lastActivityAt: r.last_at as number,
    lastChannel: (r.last_channel as string | null) ?? null,
    lastTo: (r.last_to as string | null) ?? null,
    lastAccountId: (r.last_account_id as string | null) ?? null,
  };
}

export function rowToDelivery(r: Row): Delivery {
  return {
    id: r.id as string,
    runId: (r.run_id as string | null) ?? null,
    heartbeatId: (r.heartbeat_id as string | null) ?? null,
    sessionKey: r.session_key as string,
    agentId: r.agent_id as string,
    hookName: (r.hook_name as string | null) ?? null,
    channel: r.channel as string,
    to: r.recipient as string,
    accountId: (r.account_id as string | null) ?? null,
    text: r.text as string,
    explicitRoute: r.explicit_route === 1,
    state: r.state as Delivery['state'],
    chunksSent: r.chunks_sent as number,
    attempts: r.attempts as number,
    nextAttemptAt: r.next_attempt_at as number,
    lastError: (r.last_error as string | null) ?? null,
    createdAt: r.created_at as number,
    updatedAt: r.updated_at as number,
    deliveredAt: (r.delivered_at as number | null) ?? null,
  };
}

/** A `sessions` row's route; undefined when it has none. */
export function rowToRoute(r: Row | undefined): SessionRoute | undefined {
  if (!r?.last_channel) return undefined;
  return {
    channel: r.last_channel as string,
    to: (r.last_to as string | null) ?? '',
    accountId: (r.last_account_id as string | null) ?? null,
  };
}

export function rowToMessage(r: Row): SessionMessage {
  return {
    sessionKey: r.session_key as string,
    agentId: r.agent_id as string,
    role: r.role as SessionMessage['role'],
    content: r.content as string,
    runId: (r.run_id as string | null) ?? null,
    createdAt: r.created_at as number,
  };
}

/**
 * A condition true for a received_log block that may hold a refused record (status ≥ 400): a tuple's status follows
 * the client address, a string, so a refused one is written `",4…` or `",5…` (PostgreSQL's jsonb text puts a space
 * after the comma: `", 4…`). No block with a refusal fails it; one that passes without one (a mapping id before a
 * duration of 4 or 5 ms) is only parsed for nothing. Counting the refused records of a period then parses the few
 * blocks that have them instead of every block of the period.
 */
export const mayHoldRefused = (driver: 'sqlite' | 'postgres'): string =>
  // GLOB: one pass over the text, faster than two instr() (which count characters) or a blob search.
  driver === 'sqlite' ? `records GLOB '*",[45]*'` : `records ~ '", ?[45]'`;

/**
 * One received-hook record inside a `received_log` block:
 * `[at, method, path, clientIp, status, code, eventIds, runIds, mappingId, durationMs, unknownFields?, tokenId?, reqId?]`
 * (the trailing ones only when set, those before a set one null when absent, so older blocks decode and a record
 * without them stays as it was). Both drivers store this shape (PostgreSQL's accept function sets elements
 * 4 to 7 in place and keeps the rest).
 */
export type ReceivedTuple = [
  number,
  string,
  string,
  string,
  number,
  string | null,
  string[],
  string[],
  string | null,
  number,
  (string[] | null)?,
  (string | null)?,
  string?,
];

export function receivedToTuple(r: ReceivedHook): ReceivedTuple {
  // Microseconds are plenty, and keep the stored JSON short.
  const durationMs = Math.round(r.durationMs * 1000) / 1000;
  const unknown = r.unknownFields?.length ? r.unknownFields : null;
  const t: ReceivedTuple = [
    r.at,
    r.method,
    r.path,
    r.clientIp,
    r.status,
    r.code,
    r.eventIds,
    r.runIds,
    r.mappingId,
    durationMs,
    unknown,
    r.tokenId || null,
    r.reqId ?? '',
  ];
  // A request's record has its reqId, so it keeps all thirteen: one literal, where pushing the last three onto the
  // first ten grew and copied the array (~350 bytes of garbage a request). Without, it ends at its last field set.
  if (!r.reqId) t.length = r.tokenId ? 12 : unknown ? 11 : 10;
  return t;
}

export function tupleToReceived(t: ReceivedTuple): ReceivedHook {
  const [
    at,
    method,
    path,
    clientIp,
    status,
    code,
    eventIds,
    runIds,
    mappingId,
    durationMs,
    unknownFields,
    tokenId,
    reqId,
  ] = t;
  // Only ever written from a ReceivedHook: the stored code is one of ReceivedCode.
  const rec: ReceivedHook = {
    at,
    method,
    path,
    clientIp,
    status,
    code: code as ReceivedCode | null,
    eventIds,
    runIds,
    mappingId,
    durationMs,
  };
  if (unknownFields?.length) rec.unknownFields = unknownFields;
  if (tokenId) rec.tokenId = tokenId;
  if (reqId) rec.reqId = reqId;
  return rec;
}

/** One count of a `refusal_log` row: `[status, code, pathClass, addressBucket, count]`. */
export type RefusalTuple = [number, string | null, string, string, number];

export function refusalsToJson(w: RefusalWindow): string {
  return JSON.stringify(w.counts.map((c): RefusalTuple => [c.status, c.code, c.path, c.bucket, c.count]));
}

/** A `refusal_log` row as received records (one per count, largest first), in the shape `listReceived` returns. */
export function rowToRefusals(r: Row): ReceivedHook[] {
  const at = r.at as number;
  const windowMs = r.window_ms as number;
  const tuples = JSON.parse(r.counts as string) as RefusalTuple[];
  return tuples
    .map(([status, code, path, bucket, count]) => ({
      at,
      method: 'POST',
      path,
      clientIp: bucket,
      status,
      code: code as RefusalCount['code'],
      eventIds: [],
      runIds: [],
      mappingId: null,
      durationMs: 0,
      count,
      windowMs,
    }))
    .sort((a, b) => b.count - a.count);
}

export function rowToNode(r: Row): NodeInfo {
  return {
    id: r.id as string,
    host: r.host as string,
    pid: r.pid as number,
    version: r.version as string,
    url: r.url as string,
    startedAt: r.started_at as number,
    lastSeenAt: r.last_seen_at as number,
  };
}
