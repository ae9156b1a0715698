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
