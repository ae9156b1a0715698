CREATE OR REPLACE FUNCTION tollgate_fold_calls(p_projects text[], p_ids text[], p_bounds int[])
RETURNS void LANGUAGE sql AS $$
  -- Adds the call records (project_id, id) to call_rollup (migration 0230): one upsert per
  -- (project, period, grouping) for all of them, per minute and per hour. A record created before
  -- its project's rollup start is left out (reads take those from the records). Latency buckets
  -- are width_bucket(duration_ms, p_bounds); denied calls have none (they never reached a
  -- provider). Each record must be folded once: the chain sequencer folds a record in the
  -- transaction that chains it (src/db/repositories/event-chain.ts).
  WITH r AS (
    SELECT x.project_id, w.width,
           date_bin(make_interval(secs => w.width), x.created_at, timestamptz '1970-01-01 00:00:00+00') AS start,
           x.status, x.provider, x.model, x.key_id, x.input_tokens, x.output_tokens, x.cost_usd_micros,
           CASE WHEN x.status <> 'denied' THEN width_bucket(x.duration_ms, p_bounds) END AS lb
      FROM unnest(p_projects, p_ids) AS k(project_id, id)
      JOIN calls x ON x.id = k.id AND x.project_id = k.project_id
      LEFT JOIN call_rollup_starts s ON s.project_id = x.project_id
     CROSS JOIN (VALUES (60), (3600)) AS w(width)
     WHERE s.started_at IS NULL OR x.created_at >= s.started_at
  ), by_latency AS (
    SELECT project_id, width, start, status, lb, count(*)::int AS n,
           sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cost_usd_micros) AS cost
      FROM r GROUP BY project_id, width, start, status, lb
  ), g AS (
    SELECT project_id, width, start, 'status' AS dimension, status, NULL::text AS provider, NULL::text AS model, NULL::text AS key_id,
           sum(n)::int AS calls,
           CASE WHEN status = 'failed' THEN sum(n)::int ELSE 0 END AS failed,
           CASE WHEN status = 'denied' THEN sum(n)::int ELSE 0 END AS denied,
           sum(input_tokens)::bigint AS input_tokens, sum(output_tokens)::bigint AS output_tokens, sum(cost)::bigint AS cost,
           tollgate_histogram(array_agg(lb) FILTER (WHERE lb IS NOT NULL), array_agg(n) FILTER (WHERE lb IS NOT NULL)) AS latency
      FROM by_latency GROUP BY project_id, width, start, status
    UNION ALL
    SELECT project_id, width, start, 'model', NULL, provider, model, NULL,
           count(*)::int, (count(*) FILTER (WHERE status = 'failed'))::int, (count(*) FILTER (WHERE status = 'denied'))::int,
           sum(input_tokens)::bigint, sum(output_tokens)::bigint, sum(cost_usd_micros)::bigint, NULL
      FROM r GROUP BY project_id, width, start, provider, model
    UNION ALL
    SELECT project_id, width, start, 'key', NULL, NULL, NULL, key_id,
           count(*)::int, (count(*) FILTER (WHERE status = 'failed'))::int, (count(*) FILTER (WHERE status = 'denied'))::int,
           sum(input_tokens)::bigint, sum(output_tokens)::bigint, sum(cost_usd_micros)::bigint, NULL
      FROM r GROUP BY project_id, width, start, key_id
  )
  INSERT INTO call_rollup AS c (project_id, width, start, dimension, status, provider, model, key_id,
                                calls, failed, denied, input_tokens, output_tokens, cost_usd_micros, latency)
  SELECT project_id, width, start, dimension, status, provider, model, key_id,
         calls, failed, denied, input_tokens, output_tokens, cost, latency
    FROM g
  ON CONFLICT (project_id, width, dimension, start, status, provider, model, key_id) DO UPDATE
     SET calls = c.calls + excluded.calls,
         failed = c.failed + excluded.failed,
         denied = c.denied + excluded.denied,
         input_tokens = c.input_tokens + excluded.input_tokens,
         output_tokens = c.output_tokens + excluded.output_tokens,
         cost_usd_micros = c.cost_usd_micros + excluded.cost_usd_micros,
         latency = tollgate_histogram_add(c.latency, excluded.latency);
$$;
