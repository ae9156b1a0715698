-- Up Migration
-- The batch functions of migrations 0104/0105, three changes (docs/decisions/statement-batching.md):
-- 1. They gathered a batch's permits, events and in-flight rows by appending to jsonb values
--    (`rows := rows || x`). Every jsonb `||` rebuilds both operands, so a batch of n calls cost
--    O(n²): at c=32 (about 12 calls per batch) jsonb_concat was 22 % of PostgreSQL's CPU (perf,
--    `C=32 npm run bench:pipeline-db`). The loop now keeps only the positions of the calls it
--    applies (an int[], appended in place) and the rows are inserted straight from p_calls
--    afterwards. Same decisions, same rows, same order.
-- 2. A call's events carry the fields they all share once, in the call's "event_defaults"
--    (src/db/repositories/events.ts, batchEvents); an event's own fields win over them.
-- 3. Both keep one generic plan per statement (plan_cache_mode = force_generic_plan, also inside the
--    functions they call). Under `auto` a statement with parameters is planned again on every
--    execution while its custom plans look cheaper, and these did when a batch holds one call
--    (`= ANY('{1}')`): at one call in flight planning was 35 % of PostgreSQL's CPU (GetCachedPlan
--    19.9 %, standard_planner 14.9 %). Their statements are key lookups and inserts whose best plan
--    does not depend on the values. A later CREATE OR REPLACE of either must keep the SET clause.

-- Inserts the events of the selected calls of a batch, in call order then event order, with one
-- event_chain_pending row per project (the event-chain sequencer's input, migration 0103).
-- p_project_path: where a call keeps its project id ('{project}' or '{row,project_id}').
CREATE FUNCTION tollgate_insert_batch_events(p_calls jsonb, p_positions int[], p_project_path text[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH inserted AS (
    INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                        job_id, session_id, metadata)
    SELECT e.id, t.c #>> p_project_path, e.timestamp, e.event_type, e.source, e.phase, e.provider, e.model,
           e.permit_id, e.request_id, e.job_id, e.session_id, coalesce(e.metadata, '{}'::jsonb)
      FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(c, pos)
     CROSS JOIN LATERAL jsonb_array_elements(coalesce(t.c->'events', '[]'::jsonb)) WITH ORDINALITY AS u(own, ord)
     CROSS JOIN LATERAL jsonb_to_record(coalesce(t.c->'event_defaults', '{}'::jsonb) || u.own)
          AS e(id text, timestamp timestamptz, event_type text, source text, phase text, provider text, model text,
               permit_id text, request_id text, job_id text, session_id text, metadata jsonb)
     WHERE t.pos = ANY(p_positions)
     ORDER BY t.pos, u.ord
    RETURNING project_id, seq
  )
  INSERT INTO event_chain_pending (project_id, first_seq, seqs)
  SELECT project_id, min(seq), array_agg(seq ORDER BY seq) FROM inserted GROUP BY project_id;
END;
$$;

-- p_calls: [{"project","plan","policy_version","permit","spend","quota_max","cost","rates","events","inflight"}],
-- rates: [{"limit_id","window_seconds","amount","max_used"}] (max_used: the most the window may hold before the call).
CREATE OR REPLACE FUNCTION tollgate_begin_calls(p_lock_class int, p_calls jsonb)
RETURNS text[] LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  c jsonb;
  pos int;
  k jsonb;
  r jsonb;
  out text[] := '{}';
  proj text := NULL;
  proj_plan text;
  proj_version int;
  -- "project|kind|start" -> {project, kind, start, total (counter + batch), requests (counter + batch), reserved (batch), n (batch)}
  spend jsonb := '{}';
  -- "project|limit|seconds" -> {project, limit_id, window_seconds, at, used (sliding window + batch), d (batch)}
  rates jsonb := '{}';
  -- The project's clock, read once under its lock: the instant this batch's calls count at.
  rate_at timestamptz;
  seen text[] := '{}';
  applied int[] := '{}';
  ckey text;
  cur jsonb;
  stale boolean;
  cost bigint;
BEGIN
  FOR c, pos IN SELECT t.value, t.ordinality::int FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t LOOP
    IF proj IS DISTINCT FROM c->>'project' THEN
      proj := c->>'project';
      PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(proj));
      rate_at := clock_timestamp();
      SELECT plan INTO proj_plan FROM projects WHERE id = proj;
      proj_version := coalesce((SELECT version FROM project_policies WHERE project_id = proj), 0);
    END IF;
    IF (c->'permit'->>'id') = ANY(seen) OR EXISTS (SELECT 1 FROM permits WHERE id = c->'permit'->>'id') THEN
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
        ckey := proj || '|' || (r->>'limit_id') || '|' || (r->>'window_seconds');
        cur := rates->ckey;
        IF cur IS NULL THEN
          cur := jsonb_build_object('project', proj, 'limit_id', r->>'limit_id', 'window_seconds', (r->>'window_seconds')::int,
                                    'at', rate_at, 'used', tollgate_rate_used(proj, r->>'limit_id', (r->>'window_seconds')::int, rate_at), 'd', 0);
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

    -- Allowed: count it in the batch's counters; its rows are inserted after the loop.
    cost := (c->>'cost')::bigint;
    FOR k IN SELECT value FROM jsonb_array_elements(c->'spend') LOOP
      ckey := proj || '|' || (k->>'kind') || '|' || (k->>'start');
      cur := spend->ckey;
      spend := jsonb_set(spend, ARRAY[ckey], cur || jsonb_build_object(
        'total', (cur->>'total')::bigint + cost, 'requests', (cur->>'requests')::bigint + 1,
        'reserved', (cur->>'reserved')::bigint + cost, 'n', (cur->>'n')::bigint + 1));
    END LOOP;
    FOR r IN SELECT value FROM jsonb_array_elements(c->'rates') LOOP
      ckey := proj || '|' || (r->>'limit_id') || '|' || (r->>'window_seconds');
      cur := rates->ckey;
      rates := jsonb_set(rates, ARRAY[ckey], cur || jsonb_build_object(
        'used', (cur->>'used')::bigint + (r->>'amount')::bigint, 'd', (cur->>'d')::bigint + (r->>'amount')::bigint));
    END LOOP;
    seen := seen || (c->'permit'->>'id');
    applied := applied || pos;
    out := out || 'applied'::text;
  END LOOP;

  IF cardinality(applied) > 0 THEN
    PERFORM tollgate_insert_batch_events(p_calls, applied, '{project}');
    INSERT INTO permits
    SELECT p.* FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(c, pos)
     CROSS JOIN LATERAL jsonb_populate_record(NULL::permits, t.c->'permit') AS p
     WHERE t.pos = ANY(applied);
    INSERT INTO inflight_calls (execution_id, project_id, permit_id, started_at, deadline, closing)
    SELECT t.c->'inflight'->>'execution_id', t.c->>'project', t.c->'permit'->>'id', (t.c->'inflight'->>'started_at')::timestamptz,
           (t.c->'inflight'->>'deadline')::timestamptz, t.c->'inflight'->'closing'
      FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(c, pos)
     WHERE t.pos = ANY(applied) AND jsonb_typeof(t.c->'inflight') = 'object';
  END IF;
  INSERT INTO spend_counters (project_id, period_kind, period_start, reserved_micros, settled_micros, requests)
  SELECT v->>'project', v->>'kind', (v->>'start')::date, (v->>'reserved')::bigint, 0, (v->>'n')::bigint
    FROM jsonb_each(spend) AS t(key, v)
   WHERE (v->>'n')::bigint > 0
  ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
    reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
    requests = spend_counters.requests + EXCLUDED.requests;
  INSERT INTO rate_limit_events (project_id, limit_id, window_seconds, bucket, at, amount)
  SELECT v->>'project', v->>'limit_id', (v->>'window_seconds')::int,
         tollgate_rate_bucket((v->>'at')::timestamptz, (v->>'window_seconds')::int), (v->>'at')::timestamptz, (v->>'d')::bigint
    FROM jsonb_each(rates) AS t(key, v)
   WHERE (v->>'d')::bigint > 0
  ON CONFLICT (project_id, limit_id, window_seconds, bucket) DO UPDATE
    SET amount = rate_limit_events.amount + EXCLUDED.amount, at = greatest(rate_limit_events.at, EXCLUDED.at);
  RETURN out;
END;
$$;

CREATE OR REPLACE FUNCTION tollgate_finish_calls(p_lock_class int, p_calls jsonb)
RETURNS boolean[] LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  c jsonb;
  pos int;
  k jsonb;
  out boolean[] := '{}';
  proj text;
  locked text := NULL;
  -- Positions of the calls whose events are inserted after the loop.
  with_events int[] := '{}';
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
  FOR c, pos IN SELECT t.value, t.ordinality::int FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t LOOP
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
-- Back to the bodies of migrations 0105 (begin) and 0104 (finish).
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
  -- "project|limit|seconds" -> {project, limit_id, window_seconds, at, used (sliding window + batch), d (batch)}
  rates jsonb := '{}';
  -- The project's clock, read once under its lock: the instant this batch's calls count at.
  rate_at timestamptz;
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
      rate_at := clock_timestamp();
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
        ckey := proj || '|' || (r->>'limit_id') || '|' || (r->>'window_seconds');
        cur := rates->ckey;
        IF cur IS NULL THEN
          cur := jsonb_build_object('project', proj, 'limit_id', r->>'limit_id', 'window_seconds', (r->>'window_seconds')::int,
                                    'at', rate_at, 'used', tollgate_rate_used(proj, r->>'limit_id', (r->>'window_seconds')::int, rate_at), 'd', 0);
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
      ckey := proj || '|' || (r->>'limit_id') || '|' || (r->>'window_seconds');
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
  INSERT INTO rate_limit_events (project_id, limit_id, window_seconds, bucket, at, amount)
  SELECT v->>'project', v->>'limit_id', (v->>'window_seconds')::int,
         tollgate_rate_bucket((v->>'at')::timestamptz, (v->>'window_seconds')::int), (v->>'at')::timestamptz, (v->>'d')::bigint
    FROM jsonb_each(rates) AS t(key, v)
   WHERE (v->>'d')::bigint > 0
  ON CONFLICT (project_id, limit_id, window_seconds, bucket) DO UPDATE
    SET amount = rate_limit_events.amount + EXCLUDED.amount, at = greatest(rate_limit_events.at, EXCLUDED.at);
  IF jsonb_array_length(inflight_rows) > 0 THEN
    INSERT INTO inflight_calls (execution_id, project_id, permit_id, started_at, deadline, closing)
    SELECT i->>'execution_id', i->>'project_id', i->>'permit_id', (i->>'started_at')::timestamptz, (i->>'deadline')::timestamptz, i->'closing'
      FROM jsonb_array_elements(inflight_rows) AS t(i);
  END IF;
  RETURN out;
END;
$$;



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


DROP FUNCTION tollgate_insert_batch_events(jsonb, int[], text[]);
