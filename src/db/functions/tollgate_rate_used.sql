CREATE OR REPLACE FUNCTION tollgate_rate_used(p_project text, p_limit_id text, p_seconds int, p_at timestamptz)
RETURNS bigint LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT coalesce(sum(amount), 0)::bigint FROM rate_limit_events
           WHERE project_id = p_project AND limit_id = p_limit_id AND window_seconds = p_seconds
             AND bucket >= tollgate_rate_bucket(p_at - make_interval(secs => p_seconds), p_seconds)
             AND at > p_at - make_interval(secs => p_seconds));
END;
$$;
