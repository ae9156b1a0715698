CREATE OR REPLACE FUNCTION tollgate_fold_usage(p_projects text[], p_ids text[])
RETURNS void LANGUAGE sql AS $$
  -- Adds the settled permits of the call records (project_id, id) to usage_rollup (migration
  -- 0340): one upsert per (project, hour or day of settled_at, provider, model, API key) for all of them.
  -- Only a governed call's own permit (route executions, execute or proxy:<provider>, no parent),
  -- and only when its record's statement settled it (tollgate_record_calls sets settled_at and
  -- recorded_at to the same now()): its state is then final when the record is chained. A permit
  -- settled otherwise (a usage closeout after its call was recorded) and every other kind of
  -- permit are read from the permits (src/db/repositories/settled-usage.ts). A permit settled
  -- before its project's usage rollup start is left out. Called with tollgate_fold_calls, in the
  -- transaction that chains the records (src/db/repositories/event-chain.ts).
  WITH p AS (
    SELECT p.project_id, p.settled_at, p.provider, p.model, p.metadata->>'key_id' AS key_id, p.actual_input_tokens, p.actual_output_tokens, p.actual_cost_micros
      FROM unnest(p_projects, p_ids) AS k(project_id, id)
      JOIN calls x ON x.id = k.id AND x.project_id = k.project_id
     CROSS JOIN LATERAL (SELECT * FROM permits p WHERE p.id = x.permit_id LIMIT 1) p
      LEFT JOIN usage_rollup_starts s ON s.project_id = p.project_id
     WHERE p.project_id = x.project_id
       AND (p.route IN ('executions', 'execute') OR p.route LIKE 'proxy:%') AND p.parent_permit_id IS NULL
       AND p.reservation_state = 'settled' AND p.settled_at = x.recorded_at
       AND (s.started_at IS NULL OR p.settled_at >= s.started_at)
  )
  INSERT INTO usage_rollup AS r (project_id, width, start, provider, model, key_id, requests, input_tokens, output_tokens, cost_usd_micros)
  SELECT p.project_id, w.width, date_bin(make_interval(secs => w.width), p.settled_at, timestamptz '1970-01-01 00:00:00+00'), p.provider, p.model, p.key_id,
         count(*)::int, coalesce(sum(p.actual_input_tokens), 0), coalesce(sum(p.actual_output_tokens), 0), coalesce(sum(p.actual_cost_micros), 0)
    FROM p CROSS JOIN (VALUES (3600), (86400)) AS w(width)
   GROUP BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, width, start, provider, model, key_id) DO UPDATE
     SET requests = r.requests + excluded.requests, input_tokens = r.input_tokens + excluded.input_tokens,
         output_tokens = r.output_tokens + excluded.output_tokens, cost_usd_micros = r.cost_usd_micros + excluded.cost_usd_micros;
$$;
