-- Up Migration

-- Batches apply their counters once (docs/decisions/statement-batching.md). A batch of N calls
-- of one project used to upsert the same four spend-counter rows and the same rate-window rows
-- N times each, before and after dispatch: every upsert a new row version, a row lock and a WAL
-- record, and each later upsert walking the versions the earlier ones left in the same transaction.
-- Now a batch reads each counter once (under the project's lock, taken once per project), checks
-- every call against that value plus the calls before it in the batch (so caps and rate limits still
-- hold call by call, exactly as before), and writes each counter once at the end. Permits, events
-- and in-flight rows are inserted with one statement per batch (events: one per project) instead of
-- one per call.
--
-- p_calls as before: [{"project","plan","policy_version","permit","spend","quota_max","cost","rates","events","inflight"}]
-- Answers per call, in order: 'applied', 'stale' (a bound no longer holds: the caller re-decides on
-- fresh counters) or 'exists' (this permit was already begun).
CREATE OR REPLACE FUNCTION tollgate_begin_calls(p_lock_class int, p_calls jsonb)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  c jsonb;
  k jsonb;
  r jsonb;
  out text[] := '{}';
  proj text := NULL;
  proj_plan text;
  proj_version int;
  -- "project|kind|start" -> {project, kind, start, total (counter + batch), requests (counter + batch), reserved (batch), n (batch)}
  spend jsonb := '{}';
  -- "project|limit|seconds|start" -> {project, limit_id, window_seconds, window_start, used (window + batch), d (batch)}
  rates jsonb := '{}';
  seen jsonb := '{}';
  permit_rows jsonb := '[]';
  inflight_rows jsonb := '[]';
  proj_events jsonb := '[]';
  ckey text;
  cur jsonb;
  stale boolean;
  cost bigint;
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_calls) LOOP
    IF proj IS DISTINCT FROM c->>'project' THEN
      IF jsonb_array_length(proj_events) > 0 THEN PERFORM tollgate_insert_events(proj, proj_events); END IF;
      proj_events := '[]';
      proj := c->>'project';
      PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(proj));
      SELECT plan INTO proj_plan FROM projects WHERE id = proj;
      proj_version := coalesce((SELECT version FROM project_policies WHERE project_id = proj), 0);
    END IF;
    IF seen ? (c->'permit'->>'id') OR EXISTS (SELECT 1 FROM permits WHERE id = c->'permit'->>'id') THEN
      out := out || 'exists'::text;
      CONTINUE;
    END IF;
    IF proj_plan IS DISTINCT FROM c->>'plan' OR proj_version <> (c->>'policy_version')::int THEN
      out := out || 'stale'::text;
      CONTINUE;
    END IF;

    stale := false;
    FOR k IN SELECT value FROM jsonb_array_elements(c->'spend') LOOP
      ckey := proj || '|' || (k->>'kind') || '|' || (k->>'start');
      cur := spend->ckey;
      IF cur IS NULL THEN
        SELECT jsonb_build_object('project', proj, 'kind', k->>'kind', 'start', k->>'start',
                                  'total', coalesce(max(s.settled_micros + s.reserved_micros), 0),
                                  'requests', coalesce(max(s.requests), 0), 'reserved', 0, 'n', 0)
          INTO cur
          FROM spend_counters s
         WHERE s.project_id = proj AND s.period_kind = k->>'kind' AND s.period_start = (k->>'start')::date;
        spend := spend || jsonb_build_object(ckey, cur);
      END IF;
      IF (k->>'max_total' IS NOT NULL AND (cur->>'total')::bigint > (k->>'max_total')::bigint)
         OR (k->>'kind' = 'month' AND c->>'quota_max' IS NOT NULL AND (cur->>'requests')::bigint > (c->>'quota_max')::bigint) THEN
        stale := true;
        EXIT;
      END IF;
    END LOOP;
    IF NOT stale THEN
      FOR r IN SELECT value FROM jsonb_array_elements(c->'rates') LOOP
        ckey := proj || '|' || (r->>'limit_id') || '|' || (r->>'window_seconds') || '|' || (r->>'window_start');
        cur := rates->ckey;
        IF cur IS NULL THEN
          SELECT jsonb_build_object('project', proj, 'limit_id', r->>'limit_id', 'window_seconds', (r->>'window_seconds')::int,
                                    'window_start', r->>'window_start', 'used', coalesce(max(w.used), 0), 'd', 0)
            INTO cur
            FROM rate_limit_windows w
           WHERE w.project_id = proj AND w.limit_id = r->>'limit_id' AND w.window_seconds = (r->>'window_seconds')::int
             AND w.window_start = (r->>'window_start')::timestamptz;
          rates := rates || jsonb_build_object(ckey, cur);
        END IF;
        IF (cur->>'used')::bigint > (r->>'max_used')::bigint THEN
          stale := true;
          EXIT;
        END IF;
      END LOOP;
    END IF;
    IF stale THEN
      out := out || 'stale'::text;
      CONTINUE;
    END IF;

    -- Allowed: count it in the batch's counters and queue its rows.
    cost := (c->>'cost')::bigint;
    FOR k IN SELECT value FROM jsonb_array_elements(c->'spend') LOOP
      ckey := proj || '|' || (k->>'kind') || '|' || (k->>'start');
      cur := spend->ckey;
      spend := jsonb_set(spend, ARRAY[ckey], cur || jsonb_build_object(
        'total', (cur->>'total')::bigint + cost, 'requests', (cur->>'requests')::bigint + 1,
        'reserved', (cur->>'reserved')::bigint + cost, 'n', (cur->>'n')::bigint + 1));
    END LOOP;
    FOR r IN SELECT value FROM jsonb_array_elements(c->'rates') LOOP
      ckey := proj || '|' || (r->>'limit_id') || '|' || (r->>'window_seconds') || '|' || (r->>'window_start');
      cur := rates->ckey;
      rates := jsonb_set(rates, ARRAY[ckey], cur || jsonb_build_object(
        'used', (cur->>'used')::bigint + (r->>'amount')::bigint, 'd', (cur->>'d')::bigint + (r->>'amount')::bigint));
    END LOOP;
    seen := seen || jsonb_build_object(c->'permit'->>'id', true);
    permit_rows := permit_rows || jsonb_build_array(c->'permit');
    proj_events := proj_events || coalesce(c->'events', '[]');
    IF jsonb_typeof(c->'inflight') = 'object' THEN
      inflight_rows := inflight_rows || jsonb_build_array(c->'inflight' || jsonb_build_object('project_id', proj, 'permit_id', c->'permit'->>'id'));
    END IF;
    out := out || 'applied'::text;
  END LOOP;

  IF jsonb_array_length(proj_events) > 0 THEN PERFORM tollgate_insert_events(proj, proj_events); END IF;
  IF jsonb_array_length(permit_rows) > 0 THEN
    INSERT INTO permits SELECT * FROM jsonb_populate_recordset(NULL::permits, permit_rows);
  END IF;
  INSERT INTO spend_counters (project_id, period_kind, period_start, reserved_micros, settled_micros, requests)
  SELECT v->>'project', v->>'kind', (v->>'start')::date, (v->>'reserved')::bigint, 0, (v->>'n')::bigint
    FROM jsonb_each(spend) AS t(key, v)
   WHERE (v->>'n')::bigint > 0
  ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
    reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
    requests = spend_counters.requests + EXCLUDED.requests;
  INSERT INTO rate_limit_windows (project_id, limit_id, window_seconds, window_start, used)
  SELECT v->>'project', v->>'limit_id', (v->>'window_seconds')::int, (v->>'window_start')::timestamptz, (v->>'d')::bigint
    FROM jsonb_each(rates) AS t(key, v)
   WHERE (v->>'d')::bigint > 0
  ON CONFLICT (project_id, limit_id, window_seconds, window_start) DO UPDATE SET used = rate_limit_windows.used + EXCLUDED.used;
  IF jsonb_array_length(inflight_rows) > 0 THEN
    INSERT INTO inflight_calls (execution_id, project_id, permit_id, started_at, deadline, closing)
    SELECT i->>'execution_id', i->>'project_id', i->>'permit_id', (i->>'started_at')::timestamptz, (i->>'deadline')::timestamptz, i->'closing'
      FROM jsonb_array_elements(inflight_rows) AS t(i);
  END IF;
  RETURN out;
END;
$$;

-- After dispatch, per call as tollgate_finish_call (the executions row is the exactly-once guard),
-- with the spend deltas of settling and releasing summed per counter and written once, events
-- inserted once per project and in-flight rows deleted in one statement.
--    p_calls: [{"row","events","settle","release_reason","idem","idem_body" (base64)}]
CREATE OR REPLACE FUNCTION tollgate_finish_calls(p_lock_class int, p_calls jsonb)
RETURNS boolean[] LANGUAGE plpgsql AS $$
DECLARE
  c jsonb;
  k jsonb;
  out boolean[] := '{}';
  proj text;
  locked text := NULL;
  events_proj text := NULL;
  proj_events jsonb := '[]';
  p permits%ROWTYPE;
  periods jsonb;
  -- "project|kind|start" -> {project, kind, start, reserved, settled}
  spend jsonb := '{}';
  ckey text;
  cur jsonb;
  d_reserved bigint;
  d_settled bigint;
  done_ids text[] := '{}';
  settle jsonb;
  idem jsonb;
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_calls) LOOP
    proj := c->'row'->>'project_id';
    INSERT INTO executions
    SELECT * FROM jsonb_populate_record(NULL::executions, c->'row' || jsonb_build_object('recorded_at', now()))
    ON CONFLICT (id) DO NOTHING;
    IF NOT FOUND THEN
      out := out || false;
      CONTINUE;
    END IF;
    settle := CASE WHEN jsonb_typeof(c->'settle') = 'object' THEN c->'settle' END;

    IF settle IS NOT NULL OR c->>'release_reason' IS NOT NULL THEN
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
        periods := CASE WHEN jsonb_array_length(p.reservation_periods) > 0 THEN p.reservation_periods ELSE (
          SELECT jsonb_agg(jsonb_build_object('kind', pk, 'start', to_char(date_trunc(pk, p.issued_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')) ORDER BY o)
            FROM unnest(ARRAY['day', 'week', 'month', 'quarter']) WITH ORDINALITY AS t(pk, o)) END;
        d_reserved := -(CASE WHEN p.reservation_state = 'active' THEN p.reserved_cost_micros ELSE 0 END);
        d_settled := (settle->>'cost')::bigint;
        UPDATE permits SET reservation_state = 'settled', actual_cost_micros = (settle->>'cost')::bigint,
               actual_input_tokens = (settle->>'input')::int, actual_output_tokens = (settle->>'output')::int,
               settled_at = now(), reservation_periods = periods
         WHERE id = p.id;
      ELSIF settle IS NULL AND p.reservation_state = 'active' THEN
        periods := p.reservation_periods;
        d_reserved := -p.reserved_cost_micros;
        UPDATE permits SET reservation_state = 'released', released_at = now(), release_reason = c->>'release_reason'
         WHERE id = p.id;
      END IF;
      IF periods IS NOT NULL THEN
        FOR k IN SELECT value FROM jsonb_array_elements(periods) LOOP
          ckey := p.project_id || '|' || (k->>'kind') || '|' || (k->>'start');
          cur := coalesce(spend->ckey, jsonb_build_object('project', p.project_id, 'kind', k->>'kind', 'start', k->>'start', 'reserved', 0, 'settled', 0));
          spend := spend || jsonb_build_object(ckey, cur || jsonb_build_object(
            'reserved', (cur->>'reserved')::bigint + d_reserved, 'settled', (cur->>'settled')::bigint + d_settled));
        END LOOP;
      END IF;
    END IF;

    IF jsonb_array_length(coalesce(c->'events', '[]')) > 0 THEN
      IF events_proj IS DISTINCT FROM proj THEN
        IF jsonb_array_length(proj_events) > 0 THEN PERFORM tollgate_insert_events(events_proj, proj_events); END IF;
        proj_events := '[]';
        events_proj := proj;
      END IF;
      proj_events := proj_events || (c->'events');
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

  IF jsonb_array_length(proj_events) > 0 THEN PERFORM tollgate_insert_events(events_proj, proj_events); END IF;
  INSERT INTO spend_counters (project_id, period_kind, period_start, reserved_micros, settled_micros, requests)
  SELECT v->>'project', v->>'kind', (v->>'start')::date, (v->>'reserved')::bigint, (v->>'settled')::bigint, 0
    FROM jsonb_each(spend) AS t(key, v)
   WHERE (v->>'reserved')::bigint <> 0 OR (v->>'settled')::bigint <> 0
  ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
    reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
    settled_micros = spend_counters.settled_micros + EXCLUDED.settled_micros;
  IF cardinality(done_ids) > 0 THEN
    DELETE FROM inflight_calls WHERE execution_id = ANY(done_ids);
  END IF;
  RETURN out;
END;
$$;

-- Down Migration
-- The per-call loops of migration 0100 (tollgate_begin_call / tollgate_finish_call) still exist;
-- the batch functions go back to calling them.
CREATE OR REPLACE FUNCTION tollgate_begin_calls(p_lock_class int, p_calls jsonb)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  c jsonb;
  out text[] := '{}';
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_calls) LOOP
    out := out || tollgate_begin_call(p_lock_class, c->>'project', c->>'plan', (c->>'policy_version')::int, c->'permit', c->'spend',
                                      (c->>'quota_max')::bigint, (c->>'cost')::bigint, c->'rates', c->'events',
                                      CASE WHEN jsonb_typeof(c->'inflight') = 'object' THEN c->'inflight' END);
  END LOOP;
  RETURN out;
END;
$$;
CREATE OR REPLACE FUNCTION tollgate_finish_calls(p_lock_class int, p_calls jsonb)
RETURNS boolean[] LANGUAGE plpgsql AS $$
DECLARE
  c jsonb;
  out boolean[] := '{}';
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_calls) LOOP
    out := out || tollgate_finish_call(p_lock_class, c->'row', c->'events',
                                       CASE WHEN jsonb_typeof(c->'settle') = 'object' THEN c->'settle' END,
                                       c->>'release_reason',
                                       CASE WHEN jsonb_typeof(c->'idem') = 'object' THEN c->'idem' END,
                                       decode(c->>'idem_body', 'base64'));
  END LOOP;
  RETURN out;
END;
$$;
