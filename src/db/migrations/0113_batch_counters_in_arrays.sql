-- Up Migration
-- The batch statements kept the batch's spend counters and rate windows in jsonb maps keyed
-- "project|kind|start" and changed them with `map || jsonb_build_object(...)` and `jsonb_set`, each
-- of which rebuilds the whole map: O(keys) per change, four periods per call, so a batch that spans
-- many projects (32 projects at c=32: ~10 projects and 40 keys per batch) spent a quarter of
-- PostgreSQL's CPU in jsonb_concat and jsonb_set (perf, `BENCH_PROJECTS=32 npm run
-- bench:pipeline-db`; docs/decisions/statement-batching.md). They now keep parallel arrays, one element per key,
-- found with array_position and changed in place (PL/pgSQL assigns array elements of its variables
-- in place). Same checks in the same order, same rows; the counters are upserted in the order the
-- batch first met them (projects in batch order, each under its lock, as before).

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
  -- The batch's spend counters, element i per "project|kind|start" (s_key): the counter as read
  -- (total = settled + reserved, requests) plus the batch's calls, and the batch's own part (reserved, n).
  s_key text[] := '{}';
  s_proj text[] := '{}';
  s_kind text[] := '{}';
  s_start date[] := '{}';
  s_total bigint[] := '{}';
  s_requests bigint[] := '{}';
  s_reserved bigint[] := '{}';
  s_n bigint[] := '{}';
  -- The batch's rate windows, element i per "project|limit|seconds" (r_key): used (sliding window +
  -- batch) and the batch's own part (d), counted at r_at.
  r_key text[] := '{}';
  r_proj text[] := '{}';
  r_limit text[] := '{}';
  r_window int[] := '{}';
  r_at timestamptz[] := '{}';
  r_used bigint[] := '{}';
  r_d bigint[] := '{}';
  -- This call's elements (one per period, one per rate limit) and its amount per rate limit.
  s_ix int[];
  r_ix int[];
  r_amount bigint[];
  i int;
  v_total bigint;
  v_requests bigint;
  -- The project's clock, read once under its lock: the instant this batch's calls count at.
  rate_at timestamptz;
  seen text[] := '{}';
  applied int[] := '{}';
  ckey text;
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
    s_ix := '{}';
    FOR k IN SELECT value FROM jsonb_array_elements(c->'spend') LOOP
      ckey := proj || '|' || (k->>'kind') || '|' || (k->>'start');
      i := array_position(s_key, ckey);
      IF i IS NULL THEN
        SELECT coalesce(max(s.settled_micros + s.reserved_micros), 0), coalesce(max(s.requests), 0)
          INTO v_total, v_requests
          FROM spend_counters s
         WHERE s.project_id = proj AND s.period_kind = k->>'kind' AND s.period_start = (k->>'start')::date;
        s_key := s_key || ckey;
        s_proj := s_proj || proj;
        s_kind := s_kind || (k->>'kind');
        s_start := s_start || (k->>'start')::date;
        s_total := s_total || v_total;
        s_requests := s_requests || v_requests;
        s_reserved := s_reserved || 0::bigint;
        s_n := s_n || 0::bigint;
        i := cardinality(s_key);
      END IF;
      s_ix := s_ix || i;
      IF (k->>'max_total' IS NOT NULL AND s_total[i] > (k->>'max_total')::bigint)
         OR (k->>'kind' = 'month' AND c->>'quota_max' IS NOT NULL AND s_requests[i] > (c->>'quota_max')::bigint) THEN
        stale := true;
        EXIT;
      END IF;
    END LOOP;
    IF NOT stale THEN
      r_ix := '{}';
      r_amount := '{}';
      FOR r IN SELECT value FROM jsonb_array_elements(c->'rates') LOOP
        ckey := proj || '|' || (r->>'limit_id') || '|' || (r->>'window_seconds');
        i := array_position(r_key, ckey);
        IF i IS NULL THEN
          r_key := r_key || ckey;
          r_proj := r_proj || proj;
          r_limit := r_limit || (r->>'limit_id');
          r_window := r_window || (r->>'window_seconds')::int;
          r_at := r_at || rate_at;
          r_used := r_used || tollgate_rate_used(proj, r->>'limit_id', (r->>'window_seconds')::int, rate_at);
          r_d := r_d || 0::bigint;
          i := cardinality(r_key);
        END IF;
        r_ix := r_ix || i;
        r_amount := r_amount || (r->>'amount')::bigint;
        IF r_used[i] > (r->>'max_used')::bigint THEN
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
    FOREACH i IN ARRAY s_ix LOOP
      s_total[i] := s_total[i] + cost;
      s_requests[i] := s_requests[i] + 1;
      s_reserved[i] := s_reserved[i] + cost;
      s_n[i] := s_n[i] + 1;
    END LOOP;
    FOR j IN 1 .. coalesce(cardinality(r_ix), 0) LOOP
      r_used[r_ix[j]] := r_used[r_ix[j]] + r_amount[j];
      r_d[r_ix[j]] := r_d[r_ix[j]] + r_amount[j];
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
  SELECT u.project_id, u.kind, u.start, u.reserved, 0, u.n
    FROM unnest(s_proj, s_kind, s_start, s_reserved, s_n) AS u(project_id, kind, start, reserved, n)
   WHERE u.n > 0
  ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
    reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
    requests = spend_counters.requests + EXCLUDED.requests;
  INSERT INTO rate_limit_events (project_id, limit_id, window_seconds, bucket, at, amount)
  SELECT u.project_id, u.limit_id, u.window_seconds, tollgate_rate_bucket(u.at, u.window_seconds), u.at, u.d
    FROM unnest(r_proj, r_limit, r_window, r_at, r_d) AS u(project_id, limit_id, window_seconds, at, d)
   WHERE u.d > 0
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
  IF cardinality(done_ids) > 0 THEN
    DELETE FROM inflight_calls WHERE execution_id = ANY(done_ids);
  END IF;

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


-- Down Migration
-- Back to the bodies of migrations 0107 (begin) and 0109 (finish).
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
  -- Positions of the calls whose events are inserted after the first loop.
  with_events int[] := '{}';
  -- Positions of the calls that settle or release their permit (the second loop, under the lock).
  settling int[] := '{}';
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
  IF cardinality(done_ids) > 0 THEN
    DELETE FROM inflight_calls WHERE execution_id = ANY(done_ids);
  END IF;

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
  END LOOP;
  INSERT INTO spend_counters (project_id, period_kind, period_start, reserved_micros, settled_micros, requests)
  SELECT v->>'project', v->>'kind', (v->>'start')::date, (v->>'reserved')::bigint, (v->>'settled')::bigint, 0
    FROM jsonb_each(spend) AS t(key, v)
   WHERE (v->>'reserved')::bigint <> 0 OR (v->>'settled')::bigint <> 0
  ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
    reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
    settled_micros = spend_counters.settled_micros + EXCLUDED.settled_micros;
  RETURN out;
END;
$$;
