CREATE OR REPLACE FUNCTION tollgate_consume_rates(p_project text, p_items jsonb)
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
