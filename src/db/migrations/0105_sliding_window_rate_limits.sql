-- Up Migration

-- Rate limits as exact sliding windows on the database clock (docs/decisions/sliding-window-rate-limits.md).
-- A limit of N per W seconds admits a call only when the amounts counted in the last W seconds, as
-- PostgreSQL's clock reads under the project's governance lock, plus the call's stay within N. So
-- no interval of W seconds holds more than N, wherever it starts (the fixed windows before this
-- let up to 2N through around a window boundary). Every check runs under the project's lock and
-- sees everything already counted, and a call is counted at a clock reading taken no earlier than
-- its check, which is what makes "any interval" hold across processes and replicas.
--
-- State: per limit, counts in buckets of 1/100 of the window, each stamped with the latest instant
-- counted into it (so a limit holds at most ~101 live rows however busy it is, and one upsert per
-- limit per batch, as the fixed-window upsert did). A bucket is counted until its latest count
-- ages out: never less than the truth, so the guarantee is exact and capacity comes back at most
-- 1% of the window late. Rows older than their window are purged by the maintenance round.
CREATE TABLE rate_limit_events (
  project_id      text NOT NULL REFERENCES projects(id),
  limit_id        text NOT NULL,
  window_seconds  integer NOT NULL,
  bucket          bigint NOT NULL,
  at              timestamptz NOT NULL,
  amount          bigint NOT NULL,
  PRIMARY KEY (project_id, limit_id, window_seconds, bucket)
);
DROP TABLE rate_limit_windows;

-- The bucket (1/100 of the window) an instant falls in.
CREATE FUNCTION tollgate_rate_bucket(p_at timestamptz, p_seconds int)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT floor(extract(epoch FROM p_at) * 100 / p_seconds)::bigint;
$$;

-- Used capacity of one limit in the window ending at p_at.
CREATE FUNCTION tollgate_rate_used(p_project text, p_limit_id text, p_seconds int, p_at timestamptz)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT coalesce(sum(amount), 0)::bigint FROM rate_limit_events
   WHERE project_id = p_project AND limit_id = p_limit_id AND window_seconds = p_seconds
     AND bucket >= tollgate_rate_bucket(p_at - make_interval(secs => p_seconds), p_seconds)
     AND at > p_at - make_interval(secs => p_seconds);
$$;

-- Seconds until a call of p_amount fits the window ending at p_at: until the newest counted
-- instant that must age out has (0 when it fits now; the whole window when it never can).
CREATE FUNCTION tollgate_rate_retry_after(p_project text, p_limit_id text, p_seconds int, p_limit bigint, p_amount bigint, p_at timestamptz)
RETURNS int LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_amount > p_limit THEN p_seconds ELSE coalesce((
    SELECT greatest(1, ceil(extract(epoch FROM (w.at + make_interval(secs => p_seconds)) - p_at)))::int
      FROM (SELECT e.at, sum(e.amount) OVER (ORDER BY e.at DESC) AS newer
              FROM rate_limit_events e
             WHERE e.project_id = p_project AND e.limit_id = p_limit_id AND e.window_seconds = p_seconds
               AND e.bucket >= tollgate_rate_bucket(p_at - make_interval(secs => p_seconds), p_seconds)
               AND e.at > p_at - make_interval(secs => p_seconds)) w
     WHERE w.newer + p_amount > p_limit
     ORDER BY w.at DESC LIMIT 1), 0) END;
$$;

-- The locked path's read (src/db/repositories/spend.ts): every limit's used capacity and the wait
-- for this call's amount, on the database clock. Callers hold the project's governance lock.
-- p_limits: [{"limit_id","window_seconds","limit","amount"}]
CREATE FUNCTION tollgate_rate_usage(p_project text, p_limits jsonb)
RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  WITH t AS (SELECT clock_timestamp() AS at)
  SELECT coalesce(jsonb_agg(jsonb_build_object(
           'limit_id', l->>'limit_id', 'window_seconds', (l->>'window_seconds')::int,
           'used', tollgate_rate_used(p_project, l->>'limit_id', (l->>'window_seconds')::int, t.at),
           'retry_after_seconds', tollgate_rate_retry_after(p_project, l->>'limit_id', (l->>'window_seconds')::int,
                                                            (l->>'limit')::bigint, (l->>'amount')::bigint, t.at))), '[]'::jsonb)
    FROM jsonb_array_elements(p_limits) AS l, t;
$$;

-- The locked path's write: counts the call at a clock reading taken now, after its usage was read
-- under the same lock (never earlier, so every window that holds the call was checked).
-- p_items: [{"limit_id","window_seconds","amount"}]
CREATE FUNCTION tollgate_consume_rates(p_project text, p_items jsonb)
RETURNS void LANGUAGE sql VOLATILE AS $$
  WITH t AS (SELECT clock_timestamp() AS at)
  INSERT INTO rate_limit_events (project_id, limit_id, window_seconds, bucket, at, amount)
  SELECT p_project, i->>'limit_id', (i->>'window_seconds')::int, tollgate_rate_bucket(t.at, (i->>'window_seconds')::int), t.at,
         sum((i->>'amount')::bigint)
    FROM jsonb_array_elements(p_items) AS i, t
   GROUP BY i->>'limit_id', (i->>'window_seconds')::int, t.at
  ON CONFLICT (project_id, limit_id, window_seconds, bucket) DO UPDATE
    SET amount = rate_limit_events.amount + EXCLUDED.amount, at = greatest(rate_limit_events.at, EXCLUDED.at);
$$;

-- Ungoverned proxy reads (migration 0102) on the same sliding windows. p_now is no longer used:
-- the database clock decides (the signature stays).
CREATE OR REPLACE FUNCTION tollgate_consume_read(p_lock_class int, p_project text, p_now timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  limits jsonb;
  rl jsonb;
  ws int;
  at_now timestamptz;
  retry int;
  hit jsonb := NULL;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_project));
  at_now := clock_timestamp();
  SELECT coalesce(document->'rate_limits', '[]'::jsonb) INTO limits FROM project_policies WHERE project_id = p_project;
  limits := coalesce(limits, '[]'::jsonb);
  FOR rl IN SELECT value FROM jsonb_array_elements(limits) WHERE value->>'metric' = 'requests' LOOP
    ws := (rl->>'window_seconds')::int;
    IF tollgate_rate_used(p_project, rl->>'id', ws, at_now) + 1 > (rl->>'limit')::bigint THEN
      retry := tollgate_rate_retry_after(p_project, rl->>'id', ws, (rl->>'limit')::bigint, 1, at_now);
      IF hit IS NULL
         OR (coalesce(rl->>'action', 'throttle') = 'deny' AND hit->>'action' <> 'deny')
         OR (coalesce(rl->>'action', 'throttle') = hit->>'action' AND retry > (hit->>'retry_after_seconds')::int) THEN
        hit := jsonb_build_object('limit_id', rl->>'id', 'action', coalesce(rl->>'action', 'throttle'), 'limit', (rl->>'limit')::bigint,
                                  'window_seconds', ws, 'retry_after_seconds', retry);
      END IF;
    END IF;
  END LOOP;
  IF hit IS NOT NULL THEN
    RETURN jsonb_build_object('ok', false) || hit;
  END IF;
  INSERT INTO rate_limit_events (project_id, limit_id, window_seconds, bucket, at, amount)
  SELECT p_project, r->>'id', (r->>'window_seconds')::int, tollgate_rate_bucket(at_now, (r->>'window_seconds')::int), at_now, 1
    FROM jsonb_array_elements(limits) AS r
   WHERE r->>'metric' = 'requests'
  ON CONFLICT (project_id, limit_id, window_seconds, bucket) DO UPDATE
    SET amount = rate_limit_events.amount + 1, at = greatest(rate_limit_events.at, EXCLUDED.at);
  RETURN jsonb_build_object('ok', true);
END;
$$;

-- Before dispatch, per batch (migration 0104), with the rate checks on sliding windows: the
-- project's clock is read once under its lock, each limit's window summed once per batch, every
-- call checked against that plus the calls before it in the batch, and the batch counted with one
-- upsert per limit at that instant.
-- p_calls: [{"project","plan","policy_version","permit","spend","quota_max","cost","rates","events","inflight"}],
-- rates: [{"limit_id","window_seconds","amount","max_used"}] (max_used: the most the window may hold before the call).
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


-- Down Migration
DROP FUNCTION tollgate_consume_rates(text, jsonb);
DROP FUNCTION tollgate_rate_usage(text, jsonb);
CREATE TABLE rate_limit_windows (
  project_id      text NOT NULL REFERENCES projects(id),
  limit_id        text NOT NULL,
  window_seconds  integer NOT NULL,
  window_start    timestamptz NOT NULL,
  used            bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, limit_id, window_seconds, window_start)
);
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

CREATE OR REPLACE FUNCTION tollgate_consume_read(p_lock_class int, p_project text, p_now timestamptz)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  limits jsonb;
  rl jsonb;
  ws int;
  wstart timestamptz;
  used_now bigint;
  retry int;
  hit jsonb := NULL;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_project));
  SELECT coalesce(document->'rate_limits', '[]'::jsonb) INTO limits FROM project_policies WHERE project_id = p_project;
  limits := coalesce(limits, '[]'::jsonb);
  FOR rl IN SELECT value FROM jsonb_array_elements(limits) WHERE value->>'metric' = 'requests' LOOP
    ws := (rl->>'window_seconds')::int;
    wstart := to_timestamp(floor(extract(epoch FROM p_now) / ws) * ws);
    SELECT w.used INTO used_now FROM rate_limit_windows w
     WHERE w.project_id = p_project AND w.limit_id = rl->>'id' AND w.window_seconds = ws AND w.window_start = wstart;
    IF coalesce(used_now, 0) + 1 > (rl->>'limit')::bigint THEN
      retry := greatest(1, ceil(extract(epoch FROM (wstart + make_interval(secs => ws)) - p_now))::int);
      IF hit IS NULL
         OR (coalesce(rl->>'action', 'throttle') = 'deny' AND hit->>'action' <> 'deny')
         OR (coalesce(rl->>'action', 'throttle') = hit->>'action' AND retry > (hit->>'retry_after_seconds')::int) THEN
        hit := jsonb_build_object('limit_id', rl->>'id', 'action', coalesce(rl->>'action', 'throttle'), 'limit', (rl->>'limit')::bigint,
                                  'window_seconds', ws, 'retry_after_seconds', retry);
      END IF;
    END IF;
  END LOOP;
  IF hit IS NOT NULL THEN
    RETURN jsonb_build_object('ok', false) || hit;
  END IF;
  INSERT INTO rate_limit_windows (project_id, limit_id, window_seconds, window_start, used)
  SELECT p_project, r->>'id', (r->>'window_seconds')::int,
         to_timestamp(floor(extract(epoch FROM p_now) / (r->>'window_seconds')::int) * (r->>'window_seconds')::int), 1
    FROM jsonb_array_elements(limits) AS r
   WHERE r->>'metric' = 'requests'
  ON CONFLICT (project_id, limit_id, window_seconds, window_start) DO UPDATE SET used = rate_limit_windows.used + 1;
  RETURN jsonb_build_object('ok', true);
END;
$$;

DROP FUNCTION tollgate_rate_retry_after(text, text, int, bigint, bigint, timestamptz);
DROP FUNCTION tollgate_rate_used(text, text, int, timestamptz);
DROP TABLE rate_limit_events;
DROP FUNCTION tollgate_rate_bucket(timestamptz, int);
