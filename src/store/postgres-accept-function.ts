/**
 * The PostgreSQL driver's accept semantics, in SQL: what the SQLite writer does per command (sqlite-accept.ts), for
 * a whole batch of concurrent requests' accepts and received records, in the caller's one transaction.
 *
 * `hookgate_accept_batch` is the one this hookgate calls (postgres-accept.ts sends the commands). `hookgate_accept`
 * is its predecessor, kept for nodes of an earlier version that share the database during a rolling upgrade; no
 * code of this version calls it.
 *
 * The migrations that create or redefine a function (postgres-schema.ts) all run its text. Changing one: edit it
 * here and append a step that runs it again (so a store at the previous version gets it); keep the signature, as
 * CREATE OR REPLACE would otherwise add an overload.
 */

/**
 * One jsonb array of commands: per command, the idempotency key first (claimed by INSERT … ON CONFLICT, which waits
 * for a concurrent claimer on another node to commit, so a replay anywhere sees the first answer), coalescing of
 * wakes (same text and same provenance: a trusted and an untrusted event never merge), runs, the key's replay body,
 * the sender cap. One received_log block per batch; one 'runs' notice when runs were added (delivered at commit).
 * It builds every answer and record in jsonb, command by command (each `||` copies the array so far).
 */
/**
 * A new key's sender over its cap (`idem.maxPerSender`): the sender's oldest keys go. One text for both functions
 * (interpolated where each had it, so their SQL is what it was).
 */
const CAP_SENDER_KEYS = `      SELECT count(*) INTO n FROM idempotency WHERE sender = idem->>'sender';
      IF n > (idem->>'maxPerSender')::integer THEN
        DELETE FROM idempotency WHERE (scope, key_hash) IN (SELECT scope, key_hash FROM idempotency
          WHERE sender = idem->>'sender' ORDER BY created_at LIMIT n - (idem->>'maxPerSender')::integer);
      END IF;`;

export const PG_ACCEPT_FUNCTION = `
CREATE OR REPLACE FUNCTION hookgate_accept(batch jsonb, notice_channel text) RETURNS jsonb LANGUAGE plpgsql
SET search_path FROM CURRENT AS $fn$
DECLARE
  cmd jsonb; cmd_events jsonb; ev jsonb; i integer; idem jsonb; rec jsonb; replay jsonb; outcome jsonb;
  results jsonb := '[]'; recs jsonb := '[]'; evs jsonb;
  prev idempotency%ROWTYPE; n integer; at_ms bigint; ev_untrusted integer;
  latest jsonb; prev_ev jsonb; new_evs jsonb := '[]'; new_runs jsonb := '[]';
BEGIN
  -- The latest pending event of each session the batch wakes, read once per batch: an event coalesces only into it
  -- or into one of the batch's own (kept in 'latest' as they are added), so no SELECT per event.
  SELECT COALESCE(jsonb_object_agg(k.key, to_jsonb(e)), '{}') INTO latest
    FROM (SELECT DISTINCT x.value->>'session_key' AS key FROM jsonb_array_elements(batch) c, jsonb_array_elements(c.value->'events') x) k
    CROSS JOIN LATERAL (SELECT id, text, untrusted, source FROM system_events
      WHERE session_key = k.key AND consumed_at IS NULL ORDER BY seq DESC LIMIT 1) e;
  FOR cmd IN SELECT value FROM jsonb_array_elements(batch) LOOP
    rec := cmd->'rec';
    IF cmd->>'k' = 'r' THEN
      recs := recs || jsonb_build_array(rec);
      results := results || 'null'::jsonb;
      CONTINUE;
    END IF;
    at_ms := (rec->>0)::bigint;
    idem := cmd->'idem';
    IF jsonb_typeof(idem) = 'object' THEN
      LOOP
        INSERT INTO idempotency (scope, key_hash, fingerprint, status, body, created_at, expires_at, sender)
          VALUES (idem->>'scope', idem->>'keyHash', idem->>'fingerprint', (rec->>4)::integer, '', at_ms,
                  (idem->>'expiresAt')::bigint, idem->>'sender')
          ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 1;
        SELECT * INTO prev FROM idempotency WHERE scope = idem->>'scope' AND key_hash = idem->>'keyHash' FOR UPDATE;
        CONTINUE WHEN NOT FOUND; -- deleted meanwhile: claim again
        EXIT WHEN prev.expires_at > at_ms;
        DELETE FROM idempotency WHERE scope = prev.scope AND key_hash = prev.key_hash;
      END LOOP;
      IF n = 0 THEN
        IF prev.fingerprint <> idem->>'fingerprint' THEN
          recs := recs || jsonb_build_array(jsonb_set(jsonb_set(rec, '{4}', '409'), '{5}', '"idempotency_conflict"'));
          results := results || jsonb_build_array(jsonb_build_object('kind', 'conflict'));
        ELSE
          replay := prev.body::jsonb;
          recs := recs || jsonb_build_array(jsonb_set(jsonb_set(jsonb_set(rec, '{4}', to_jsonb(prev.status)), '{5}', '"duplicate"'),
            '{6}', jsonb_path_query_array(replay, '$.outcome.events[*].eventId')));
          results := results || jsonb_build_array(jsonb_build_object('kind', 'duplicate', 'replay', replay, 'status', prev.status));
        END IF;
        CONTINUE;
      END IF;
    END IF;

    evs := '[]';
    cmd_events := cmd->'events';
    -- By index, not FOR … IN SELECT: an expression, where a query per command would be one more statement per wake.
    FOR i IN 0 .. jsonb_array_length(cmd_events) - 1 LOOP
      ev := cmd_events->i;
      -- An event without the provenance keys (sent by a node of an older version) is trusted, as before.
      ev_untrusted := COALESCE((ev->>'untrusted')::integer, 0);
      prev_ev := latest->(ev->>'session_key');
      IF prev_ev IS NOT NULL AND prev_ev->>'text' = ev->>'text' AND (prev_ev->>'untrusted')::integer = ev_untrusted
          AND prev_ev->>'source' IS NOT DISTINCT FROM ev->>'source' THEN
        evs := evs || jsonb_build_array(jsonb_build_object('eventId', prev_ev->>'id', 'outcome', 'coalesced'));
      ELSE
        ev := jsonb_set(ev, '{untrusted}', to_jsonb(ev_untrusted));
        new_evs := new_evs || jsonb_build_array(ev);
        latest := latest || jsonb_build_object(ev->>'session_key', ev);
        evs := evs || jsonb_build_array(jsonb_build_object('eventId', ev->>'id', 'outcome', 'queued'));
      END IF;
    END LOOP;

    new_runs := new_runs || (cmd->'runs');

    outcome := jsonb_build_object('events', evs);
    IF jsonb_typeof(idem) = 'object' THEN
      UPDATE idempotency SET body = jsonb_build_object('spec', cmd->'spec', 'outcome', outcome)::text
        WHERE scope = idem->>'scope' AND key_hash = idem->>'keyHash';
${CAP_SENDER_KEYS}
    END IF;
    recs := recs || jsonb_build_array(jsonb_set(jsonb_set(rec, '{6}', jsonb_path_query_array(evs, '$[*].eventId')), '{7}', cmd->'runIds'));
    results := results || jsonb_build_array(jsonb_build_object('kind', 'accepted', 'outcome', outcome));
  END LOOP;

  -- Every new event and run of the batch in one INSERT each, in the batch's order (seq follows it).
  IF jsonb_array_length(new_evs) > 0 THEN
    INSERT INTO system_events (id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source)
      SELECT id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source
      FROM jsonb_populate_recordset(NULL::system_events, new_evs) WITH ORDINALITY AS e ORDER BY e.ordinality;
  END IF;
  IF jsonb_array_length(new_runs) > 0 THEN
    INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel, recipient,
        account_id, model, thinking, timeout_seconds, allow_unsafe, content_source, hook_path, mapping_id, created_at, updated_at)
      SELECT id, 'queued', agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel, recipient,
        account_id, model, thinking, timeout_seconds, allow_unsafe, content_source, hook_path, mapping_id, created_at, created_at
      FROM jsonb_populate_recordset(NULL::runs, new_runs) WITH ORDINALITY AS r ORDER BY r.ordinality;
  END IF;
  IF jsonb_array_length(recs) > 0 THEN
    INSERT INTO received_log (at, records)
      VALUES ((SELECT max((r->>0)::bigint) FROM jsonb_array_elements(recs) r), recs::text);
  END IF;
  IF jsonb_array_length(new_runs) > 0 THEN
    PERFORM pg_notify(notice_channel, '{"kind":"runs"}');
  END IF;
  RETURN results;
END
$fn$;
`;

/**
 * The batch as the client already knows it, so that the usual batch (nothing coalesced, no key used before) is
 * inserted as sent and answered with NULL: the new events (objects with the short keys of the column list below,
 * `c` the index of their command), the new runs (`[command index, row as postgres-rows.ts makes it]`), the
 * idempotency claims (NULL when none), and the received_log block as text,
 * rendered as if every command were accepted as sent (event ids its own, run ids its runs'). Otherwise it answers
 * `{merged: [[command, event index, id it coalesced into], …] | null, answers: {command: conflict | duplicate}}`
 * and corrects the block's records to match.
 *
 * Coalescing is one statement for the batch: an event coalesces into its session's latest pending event when both
 * have the same text and provenance. That latest is, for the session's first event in the batch, the stored one,
 * and for the others the event before it in the batch (a coalesced event equals the one it merged into, so comparing
 * each event with its predecessor is enough); it merges into the first event of its run of equals, or the stored one.
 * Most batches merge nothing, and a cheaper statement shows it first: no two events of the batch alike (session, text
 * and provenance) and none like its session's stored latest. Such a batch is inserted as sent; the window functions
 * that find merges were a third of the database's CPU per accepted wake (docs/performance.md).
 */
export const PG_ACCEPT_BATCH_FUNCTION = `
CREATE OR REPLACE FUNCTION hookgate_accept_batch(new_events jsonb, new_runs jsonb, claims jsonb, records text, records_at bigint,
    notice_channel text) RETURNS jsonb LANGUAGE plpgsql
SET search_path FROM CURRENT AS $fn$
DECLARE
  idem jsonb; prev idempotency%ROWTYPE; n integer; m jsonb; a jsonb; cmd text;
  skipped integer[] := '{}'; answers jsonb := '{}'; merged jsonb; into_of jsonb; recs jsonb; plain boolean;
BEGIN
  -- The keys first, in the batch's order: a command whose key was used before is answered from it and writes nothing.
  IF claims IS NOT NULL THEN
    FOR idem IN SELECT value FROM jsonb_array_elements(claims) LOOP
      LOOP
        INSERT INTO idempotency (scope, key_hash, fingerprint, status, body, created_at, expires_at, sender)
          VALUES (idem->>'scope', idem->>'keyHash', idem->>'fingerprint', (idem->>'status')::integer, '',
                  (idem->>'at')::bigint, (idem->>'expiresAt')::bigint, idem->>'sender')
          ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS n = ROW_COUNT;
        EXIT WHEN n = 1;
        SELECT * INTO prev FROM idempotency WHERE scope = idem->>'scope' AND key_hash = idem->>'keyHash' FOR UPDATE;
        CONTINUE WHEN NOT FOUND; -- deleted meanwhile: claim again
        EXIT WHEN prev.expires_at > (idem->>'at')::bigint;
        DELETE FROM idempotency WHERE scope = prev.scope AND key_hash = prev.key_hash;
      END LOOP;
      IF n = 0 THEN
        IF prev.fingerprint <> idem->>'fingerprint' THEN
          a := jsonb_build_object('kind', 'conflict');
        ELSIF prev.body = '' THEN
          -- Claimed by an earlier command of this batch, whose answer is written below: a data error, so that the
          -- client sends each command alone and this one finds the first one's answer committed.
          RAISE EXCEPTION 'idempotency key used twice in one batch' USING ERRCODE = 'unique_violation';
        ELSE
          a := jsonb_build_object('kind', 'duplicate', 'replay', prev.body::jsonb, 'status', prev.status);
        END IF;
        skipped := skipped || (idem->>'c')::integer;
        answers := answers || jsonb_build_object(idem->>'c', a);
        CONTINUE;
      END IF;
${CAP_SENDER_KEYS}
    END LOOP;
  END IF;

  -- Coalescing, the whole batch in one statement (see above); the events of answered commands left out. First whether
  -- anything can merge: alike counts an answered command's events too, which can only send a batch the long way.
  IF jsonb_array_length(new_events) > 0 THEN
    WITH x AS (SELECT * FROM jsonb_to_recordset(new_events) AS x(s text, t text, u integer, src text))
    SELECT (SELECT count(*) = count(DISTINCT (x.s, x.t, x.u, x.src)) FROM x) AND NOT EXISTS (
        SELECT 1 FROM (SELECT DISTINCT x.s FROM x) k
        CROSS JOIN LATERAL (SELECT e.text, e.untrusted, e.source FROM system_events e
          WHERE e.session_key = k.s AND e.consumed_at IS NULL ORDER BY e.seq DESC LIMIT 1) l
        WHERE EXISTS (SELECT 1 FROM x WHERE x.s = k.s AND x.t = l.text AND x.u = l.untrusted
          AND x.src IS NOT DISTINCT FROM l.source))
      INTO plain;
  END IF;
  IF plain THEN
    INSERT INTO system_events (id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source)
      SELECT x.id, x.session_key, x.agent_id, x.text, x.origin, x.run_id, x.created_at, x.untrusted, x.source
      FROM ROWS FROM (jsonb_to_recordset(new_events) AS (c integer, i text, s text, a text, t text, o text, r text,
          at bigint, u integer, src text))
        WITH ORDINALITY AS x(c, id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source, o)
      WHERE x.c <> ALL (skipped) ORDER BY x.o;
  ELSIF NOT plain THEN
    WITH x AS (
      SELECT * FROM ROWS FROM (jsonb_to_recordset(new_events) AS (c integer, i text, s text, a text, t text, o text,
          r text, at bigint, u integer, src text))
        WITH ORDINALITY AS x(c, id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source, o)
      WHERE x.c <> ALL (skipped)
    ), latest AS (
      SELECT k.session_key, e.id, e.text, e.untrusted, e.source
      FROM (SELECT DISTINCT session_key FROM x) k CROSS JOIN LATERAL (SELECT id, text, untrusted, source
        FROM system_events WHERE session_key = k.session_key AND consumed_at IS NULL ORDER BY seq DESC LIMIT 1) e
    ), w AS (
      SELECT x.*, l.id AS l_id, CASE WHEN lag(x.o) OVER s IS NULL
          THEN l.id IS NOT NULL AND l.text = x.text AND l.untrusted = x.untrusted AND l.source IS NOT DISTINCT FROM x.source
          ELSE lag(x.text) OVER s = x.text AND lag(x.untrusted) OVER s = x.untrusted
            AND lag(x.source) OVER s IS NOT DISTINCT FROM x.source END AS merges
      FROM x LEFT JOIN latest l ON l.session_key = x.session_key
      WINDOW s AS (PARTITION BY x.session_key ORDER BY x.o)
    ), g AS (
      SELECT w.*, count(*) FILTER (WHERE NOT w.merges) OVER (PARTITION BY w.session_key ORDER BY w.o) AS run_no,
        row_number() OVER (PARTITION BY w.c ORDER BY w.o) - 1 AS k
      FROM w
    ), r AS (
      SELECT g.*, CASE WHEN g.run_no = 0 THEN g.l_id
        ELSE first_value(g.id) OVER (PARTITION BY g.session_key, g.run_no ORDER BY g.o) END AS into_id
      FROM g
    ), ins AS (
      INSERT INTO system_events (id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source)
        SELECT id, session_key, agent_id, text, origin, run_id, created_at, untrusted, source FROM r WHERE NOT merges
        ORDER BY o
    )
    SELECT jsonb_agg(jsonb_build_array(r.c, r.k, r.into_id) ORDER BY r.o), jsonb_object_agg(r.o, r.into_id)
      INTO merged, into_of FROM r WHERE r.merges;
  END IF;

  IF jsonb_array_length(new_runs) > 0 THEN
    INSERT INTO runs (id, state, agent_id, session_key, session_mode, name, message, wake_mode, deliver, channel, recipient,
        account_id, model, thinking, timeout_seconds, allow_unsafe, content_source, hook_path, mapping_id, created_at, updated_at)
      SELECT r.id, 'queued', r.agent_id, r.session_key, r.session_mode, r.name, r.message, r.wake_mode, r.deliver, r.channel,
        r.recipient, r.account_id, r.model, r.thinking, r.timeout_seconds, r.allow_unsafe, r.content_source, r.hook_path,
        r.mapping_id, r.created_at, r.created_at
      FROM jsonb_array_elements(new_runs) WITH ORDINALITY AS e(v, o), jsonb_populate_record(NULL::runs, e.v->1) r
      WHERE (e.v->>0)::integer <> ALL (skipped) ORDER BY e.o;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
      PERFORM pg_notify(notice_channel, '{"kind":"runs"}');
    END IF;
  END IF;

  -- Each new key's answer, for its repeats: the answer spec and the outcome of each of the command's events.
  IF claims IS NOT NULL THEN
    UPDATE idempotency i SET body = jsonb_build_object('spec', cl.value->'spec', 'outcome', jsonb_build_object('events',
        COALESCE((SELECT jsonb_agg(CASE WHEN into_of ? ev.o::text
              THEN jsonb_build_object('eventId', into_of->>ev.o::text, 'outcome', 'coalesced')
              ELSE jsonb_build_object('eventId', ev.v->>'i', 'outcome', 'queued') END ORDER BY ev.o)
          FROM jsonb_array_elements(new_events) WITH ORDINALITY AS ev(v, o)
          WHERE ev.v->'c' = cl.value->'c'), '[]')))::text
      FROM jsonb_array_elements(claims) cl
      WHERE i.scope = cl.value->>'scope' AND i.key_hash = cl.value->>'keyHash'
        AND (cl.value->>'c')::integer <> ALL (skipped);
  END IF;

  -- The received records, rendered by the client as if every command were accepted as sent; corrected where not.
  IF merged IS NOT NULL OR cardinality(skipped) > 0 THEN
    recs := records::jsonb;
    FOR m IN SELECT value FROM jsonb_array_elements(COALESCE(merged, '[]')) LOOP
      recs := jsonb_set(recs, ARRAY[m->>0, '6', m->>1], m->2);
    END LOOP;
    -- A command answered from its key: the answer's status and code, the first answer's event ids, no run.
    FOR cmd, a IN SELECT key, value FROM jsonb_each(answers) LOOP
      recs := jsonb_set(recs, ARRAY[cmd], jsonb_set(jsonb_set(jsonb_set(jsonb_set(recs->(cmd::integer),
        '{4}', COALESCE(a->'status', '409')),
        '{5}', to_jsonb(CASE a->>'kind' WHEN 'conflict' THEN 'idempotency_conflict' ELSE 'duplicate' END)),
        '{6}', COALESCE(jsonb_path_query_array(a->'replay', '$.outcome.events[*].eventId'), '[]')),
        '{7}', '[]'));
    END LOOP;
    records := recs::text;
  END IF;
  INSERT INTO received_log (at, records) VALUES (records_at, records);
  IF merged IS NULL AND answers = '{}' THEN
    RETURN NULL;
  END IF;
  RETURN jsonb_build_object('merged', merged, 'answers', answers);
END
$fn$;
`;
