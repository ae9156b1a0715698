CREATE OR REPLACE FUNCTION tollgate_fold_governance(p_projects text[], p_ids text[])
RETURNS void LANGUAGE sql AS $$
  -- Adds the permits of the call records (project_id, id) to governance_rollup (migration 0310):
  -- one upsert per (project, period of issued_at, grouping) for all of them, per minute and per
  -- hour; decisions by (decision, reason code), firewall actions by (action, category). Only a
  -- governed call's own permit (route executions, execute or proxy:<provider>, no parent): each has exactly
  -- one record, so folding records folds each such permit once. Every other permit is read from
  -- the permits (permits_unfolded_issued_idx holds them). A permit issued before its project's
  -- governance rollup start is left out. Called with tollgate_fold_calls, in the transaction
  -- that chains the records (src/db/repositories/event-chain.ts).
  WITH p AS (
    SELECT p.project_id, p.issued_at, p.decision, p.reason_code, p.metadata->'decision_metadata'->'firewall' AS fw
      FROM unnest(p_projects, p_ids) AS k(project_id, id)
      JOIN calls x ON x.id = k.id AND x.project_id = k.project_id
     CROSS JOIN LATERAL (SELECT * FROM permits p WHERE p.id = x.permit_id LIMIT 1) p
      LEFT JOIN governance_rollup_starts s ON s.project_id = p.project_id
     WHERE p.project_id = x.project_id
       AND (p.route IN ('executions', 'execute') OR p.route LIKE 'proxy:%') AND p.parent_permit_id IS NULL
       AND (s.started_at IS NULL OR p.issued_at >= s.started_at)
  ), w AS (
    SELECT p.*, w.width, date_bin(make_interval(secs => w.width), p.issued_at, timestamptz '1970-01-01 00:00:00+00') AS start
      FROM p CROSS JOIN (VALUES (60), (3600)) AS w(width)
  ), g AS (
    SELECT project_id, width, start, 'decision' AS dimension, decision, reason_code, NULL::text AS action, NULL::text AS category, count(*)::int AS permits
      FROM w GROUP BY project_id, width, start, decision, reason_code
    UNION ALL
    SELECT project_id, width, start, 'firewall', NULL, NULL, f.action, f.category, count(*)::int
      FROM w CROSS JOIN LATERAL tollgate_firewall_actions(w.fw) AS f
     WHERE w.fw IS NOT NULL
     GROUP BY project_id, width, start, f.action, f.category
  )
  INSERT INTO governance_rollup AS r (project_id, width, start, dimension, decision, reason_code, action, category, permits)
  SELECT project_id, width, start, dimension, decision, reason_code, action, category, permits FROM g
  ON CONFLICT (project_id, width, dimension, start, decision, reason_code, action, category) DO UPDATE
     SET permits = r.permits + excluded.permits;
$$;
