CREATE OR REPLACE FUNCTION tollgate_govern_calls(p_lock_class int, p_calls jsonb)
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
