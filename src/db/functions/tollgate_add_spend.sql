CREATE OR REPLACE FUNCTION tollgate_add_spend(p_project text, p_periods jsonb, p_reserved bigint, p_settled bigint, p_requests bigint)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO spend_counters (project_id, period_kind, period_start, reserved_micros, settled_micros, requests)
  SELECT p_project, k->>'kind', (k->>'start')::date, p_reserved, p_settled, p_requests FROM jsonb_array_elements(p_periods) AS k
  ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
    reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
    settled_micros = spend_counters.settled_micros + EXCLUDED.settled_micros,
    requests = spend_counters.requests + EXCLUDED.requests;
$$;
