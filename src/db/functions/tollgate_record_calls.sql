CREATE OR REPLACE FUNCTION tollgate_record_calls(p_lock_class int, p_calls jsonb)
RETURNS boolean[] LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  c jsonb;
  pos int;
  k jsonb;
  out boolean[] := '{}';
  proj text;
  locked text := NULL;
  -- Positions of the calls whose events are inserted after the first loop.
  with_events int[] := '{}';
  -- Positions of the calls that settle or release their permit (the second loop, under the lock).
  settling int[] := '{}';
  p permits%ROWTYPE;
  periods jsonb;
  -- The batch's changes to spend counters, element i per "project|kind|start" (s_key).
  s_key text[] := '{}';
  s_proj text[] := '{}';
  s_kind text[] := '{}';
  s_start date[] := '{}';
  s_reserved bigint[] := '{}';
  s_settled bigint[] := '{}';
  i int;
  ckey text;
  d_reserved bigint;
  d_settled bigint;
  done_ids text[] := '{}';
  settle jsonb;
  idem jsonb;
  -- The call records inserted now (a row already recorded, or a second copy in the batch, is not).
  inserted text[];
  -- What a call's row does not carry: recorded_at.
  call_base calls;
BEGIN
  call_base.recorded_at := now();
  -- A record with a lifecycle (the in-process pipeline's) takes a seq and is queued for the chain
  -- sequencer as one leaf; its events are derived from it (src/executions/lifecycle-events.ts).
  WITH ins AS (
    INSERT INTO calls
    SELECT r.* FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(c, ord)
     CROSS JOIN LATERAL jsonb_populate_record(call_base, CASE WHEN t.c->'row' ? 'lifecycle'
                          THEN t.c->'row' || jsonb_build_object('seq', nextval('events_seq_seq')) ELSE t.c->'row' END) AS r
    ON CONFLICT (id) DO NOTHING
    RETURNING id, project_id, seq
  ), queued AS (
    INSERT INTO event_chain_pending (project_id, first_seq, seqs)
    SELECT project_id, min(seq), array_agg(seq ORDER BY seq) FROM ins WHERE seq IS NOT NULL GROUP BY project_id
  )
  SELECT coalesce(array_agg(id), '{}') INTO inserted FROM ins;
  FOR c, pos IN SELECT t.value, t.ordinality::int FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t LOOP
    proj := c->'row'->>'project_id';
    IF NOT ((c->'row'->>'id') = ANY(inserted)) OR (c->'row'->>'id') = ANY(done_ids) THEN
      out := out || false;
      CONTINUE;
    END IF;
    IF jsonb_typeof(c->'settle') = 'object' OR c->>'release_reason' IS NOT NULL THEN
      settling := settling || pos;
    END IF;
    IF jsonb_array_length(coalesce(c->'events', '[]')) > 0 THEN
      with_events := with_events || pos;
    END IF;
    done_ids := done_ids || (c->'row'->>'id');

    idem := CASE WHEN jsonb_typeof(c->'idem') = 'object' THEN c->'idem' END;
    IF idem IS NOT NULL AND (idem->>'release')::boolean IS TRUE THEN
      DELETE FROM idempotency_keys WHERE project_id = proj AND scope = idem->>'scope' AND key = idem->>'key' AND state = 'in_flight';
    ELSIF idem IS NOT NULL THEN
      UPDATE idempotency_keys
         SET state = 'completed', completed_at = now(), resource_id = c->'row'->>'id',
             response_status = (idem->>'status')::int,
             response_headers = CASE WHEN idem->>'status' IS NULL THEN NULL ELSE idem->'headers' END,
             response_body = CASE WHEN idem->>'status' IS NULL THEN NULL ELSE decode(c->>'idem_body', 'base64') END
       WHERE project_id = proj AND scope = idem->>'scope' AND key = idem->>'key';
    END IF;
    out := out || true;
  END LOOP;

  IF cardinality(with_events) > 0 THEN PERFORM tollgate_insert_batch_events(p_calls, with_events, '{row,project_id}'); END IF;

  -- Settlements and releases last, under each project's lock, which is held to the commit.
  FOR c IN SELECT t.c FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(c, pos) WHERE t.pos = ANY(settling) ORDER BY t.pos LOOP
    proj := c->'row'->>'project_id';
    settle := CASE WHEN jsonb_typeof(c->'settle') = 'object' THEN c->'settle' END;
    IF locked IS DISTINCT FROM proj THEN
      PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(proj));
      locked := proj;
    END IF;
    SELECT * INTO p FROM permits WHERE id = c->'row'->>'permit_id' FOR UPDATE;
    d_reserved := 0;
    d_settled := 0;
    periods := NULL;
    IF p.id IS NULL THEN
      NULL;
    ELSIF settle IS NOT NULL AND p.reservation_state <> 'settled' THEN
      periods := tollgate_permit_periods(p.reservation_periods, p.issued_at);
      d_reserved := -(CASE WHEN p.reservation_state = 'active' THEN p.reserved_cost_micros ELSE 0 END);
      d_settled := (settle->>'cost')::bigint;
      UPDATE permits SET reservation_state = 'settled', actual_cost_micros = (settle->>'cost')::bigint,
             actual_input_tokens = (settle->>'input')::int, actual_output_tokens = (settle->>'output')::int,
             settled_at = now(), closing = NULL, dispatch_deadline = NULL
       WHERE id = p.id;
    ELSIF settle IS NULL AND p.reservation_state = 'active' THEN
      periods := tollgate_permit_periods(p.reservation_periods, p.issued_at);
      d_reserved := -p.reserved_cost_micros;
      UPDATE permits SET reservation_state = 'released', released_at = now(), release_reason = c->>'release_reason',
             closing = NULL, dispatch_deadline = NULL
       WHERE id = p.id;
    ELSIF p.closing IS NOT NULL THEN
      -- Recorded, its reservation already closed otherwise (expired, revoked): no longer in flight.
      UPDATE permits SET closing = NULL, dispatch_deadline = NULL WHERE id = p.id;
    END IF;
    IF periods IS NOT NULL THEN
      FOR k IN SELECT value FROM jsonb_array_elements(periods) LOOP
        ckey := p.project_id || '|' || (k->>'kind') || '|' || (k->>'start');
        i := array_position(s_key, ckey);
        IF i IS NULL THEN
          s_key := s_key || ckey;
          s_proj := s_proj || p.project_id;
          s_kind := s_kind || (k->>'kind');
          s_start := s_start || (k->>'start')::date;
          s_reserved := s_reserved || 0::bigint;
          s_settled := s_settled || 0::bigint;
          i := cardinality(s_key);
        END IF;
        s_reserved[i] := s_reserved[i] + d_reserved;
        s_settled[i] := s_settled[i] + d_settled;
      END LOOP;
    END IF;
  END LOOP;
  INSERT INTO spend_counters (project_id, period_kind, period_start, reserved_micros, settled_micros, requests)
  SELECT u.project_id, u.kind, u.start, u.reserved, u.settled, 0
    FROM unnest(s_proj, s_kind, s_start, s_reserved, s_settled) AS u(project_id, kind, start, reserved, settled)
   WHERE u.reserved <> 0 OR u.settled <> 0
  ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
    reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
    settled_micros = spend_counters.settled_micros + EXCLUDED.settled_micros;
  RETURN out;
END;
$$;
