/**
 * hookgate_accept, the PostgreSQL driver's accept semantics, defined once: the accept path in one round trip
 * (postgres-accept.ts sends the commands). A batch of concurrent requests' accepts (and received records) arrives as
 * one jsonb array, is committed in the caller's one transaction and answered with one result per command, in order.
 * Per command, as the SQLite writer does (sqlite-accept.ts): the idempotency key first (claimed by INSERT … ON
 * CONFLICT, which waits for a concurrent claimer on another node to commit, so a replay anywhere sees the first
 * answer), coalescing of wakes (same text and same provenance: a trusted and an untrusted event never merge), runs,
 * the key's replay body, the sender cap. One received_log block per batch; one 'runs' notice when runs were added
 * (delivered at commit).
 *
 * The migrations that create or redefine the function (postgres-schema.ts) all run this text. Changing it: edit it
 * here and append a step that runs it again (so a store at the previous version gets it); keep the signature, as
 * CREATE OR REPLACE would otherwise add an overload.
 */
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
      SELECT count(*) INTO n FROM idempotency WHERE sender = idem->>'sender';
      IF n > (idem->>'maxPerSender')::integer THEN
        DELETE FROM idempotency WHERE (scope, key_hash) IN (SELECT scope, key_hash FROM idempotency
          WHERE sender = idem->>'sender' ORDER BY created_at LIMIT n - (idem->>'maxPerSender')::integer);
      END IF;
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
