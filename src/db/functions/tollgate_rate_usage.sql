CREATE OR REPLACE FUNCTION tollgate_rate_usage(p_project text, p_limits jsonb)
RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  WITH t AS (SELECT clock_timestamp() AS at)
  SELECT coalesce(jsonb_agg(jsonb_build_object(
           'limit_id', l->>'limit_id', 'window_seconds', (l->>'window_seconds')::int,
           'used', tollgate_rate_used(p_project, l->>'limit_id', (l->>'window_seconds')::int, t.at),
           'retry_after_seconds', tollgate_rate_retry_after(p_project, l->>'limit_id', (l->>'window_seconds')::int,
                                                            (l->>'limit')::bigint, (l->>'amount')::bigint, t.at))), '[]'::jsonb)
    FROM jsonb_array_elements(p_limits) AS l, t;
$$;
