CREATE OR REPLACE FUNCTION tollgate_rate_retry_after(p_project text, p_limit_id text, p_seconds int, p_limit bigint, p_amount bigint, p_at timestamptz)
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
