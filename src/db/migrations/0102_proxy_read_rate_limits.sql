-- Up Migration

-- Ungoverned proxy reads (model lists, token counting, stored responses) count against the
-- project's request rate limits like governed calls do (src/proxy/reads.ts). One statement under
-- the project's governance lock: reads the policy's `requests` limits, refuses when any window is
-- full (the same choice of limit as governance: a deny beats a throttle, then the longest wait),
-- else counts the read in every window. Window starts are epoch multiples of the window length,
-- as rateWindow() computes them in src/governance/periods.ts.
CREATE FUNCTION tollgate_consume_read(p_lock_class int, p_project text, p_now timestamptz)
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

-- Down Migration
DROP FUNCTION tollgate_consume_read(int, text, timestamptz);
