/**
 * Object → row encoding of the PostgreSQL driver's inserts: plain objects keyed by column name, sent as one jsonb
 * array per statement (`jsonb_populate_recordset(NULL::<table>, $1)`), so N rows cost one statement. Rows read back
 * decode with record-encoding.ts, as SQLite's do: the columns are the same, bigint is parsed to a number
 * (postgres-connect.ts) and 0/1 booleans are integers on both.
 */
import type { NewDelivery, NewRun, NewSystemEvent, SessionMessage } from './types.js';

export function eventRow(ev: NewSystemEvent) {
  return {
    id: ev.id,
    session_key: ev.sessionKey,
    agent_id: ev.agentId,
    text: ev.text,
    origin: ev.origin,
    run_id: ev.runId ?? null,
    created_at: ev.createdAt,
    untrusted: ev.untrusted === true ? 1 : 0,
    source: ev.source ?? null,
  };
}

export function runRow(r: NewRun) {
  return {
    id: r.id,
    agent_id: r.agentId,
    session_key: r.sessionKey,
    session_mode: r.sessionMode,
    name: r.name,
    message: r.message,
    wake_mode: r.wakeMode,
    deliver: r.deliver ? 1 : 0,
    channel: r.channel,
    recipient: r.to,
    account_id: r.accountId,
    model: r.model,
    thinking: r.thinking,
    timeout_seconds: r.timeoutSeconds,
    allow_unsafe: r.allowUnsafeExternalContent ? 1 : 0,
    content_source: r.contentSource,
    hook_path: r.hookPath,
    mapping_id: r.mappingId,
    created_at: r.createdAt,
  };
}

export function deliveryRow(d: NewDelivery) {
  return {
    id: d.id,
    run_id: d.runId,
    heartbeat_id: d.heartbeatId,
    session_key: d.sessionKey,
    agent_id: d.agentId,
    hook_name: d.hookName,
    channel: d.channel,
    recipient: d.to,
    account_id: d.accountId,
    text: d.text,
    explicit_route: d.explicitRoute ? 1 : 0,
    next_attempt_at: d.createdAt,
    created_at: d.createdAt,
  };
}

export function messageRow(m: SessionMessage) {
  return {
    session_key: m.sessionKey,
    agent_id: m.agentId,
    role: m.role,
    content: m.content,
    run_id: m.runId,
    created_at: m.createdAt,
  };
}

/** The multi-row inserts: one statement each, `$1` the jsonb array of rows. */
export const INSERT_EVENTS = `INSERT INTO system_events (id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source)
  SELECT id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source FROM jsonb_populate_recordset(NULL::system_events, $1::jsonb)`;

export const INSERT_DELIVERIES = `INSERT INTO deliveries (id, run_id, heartbeat_id, session_key, agent_id, hook_name, channel, recipient,
    account_id, text, explicit_route, state, next_attempt_at, created_at, updated_at)
  SELECT id, run_id, heartbeat_id, session_key, agent_id, hook_name, channel, recipient, account_id, text, explicit_route, 'pending',
    next_attempt_at, created_at, created_at FROM jsonb_populate_recordset(NULL::deliveries, $1::jsonb)`;

/** `WITH ORDINALITY` keeps the given order in seq (a transcript's turns). */
export const INSERT_MESSAGES = `INSERT INTO session_messages (session_key, agent_id, role, content, run_id, created_at)
  SELECT m.session_key, m.agent_id, m.role, m.content, m.run_id, m.created_at
  FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(v, n), jsonb_populate_record(NULL::session_messages, e.v) AS m ORDER BY e.n`;
