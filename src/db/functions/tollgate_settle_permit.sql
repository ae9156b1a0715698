CREATE OR REPLACE FUNCTION tollgate_settle_permit(p_lock_class int, p_permit text, p_cost bigint, p_input int, p_output int, p_at timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  proj text;
  p permits%ROWTYPE;
  periods jsonb;
BEGIN
  SELECT project_id INTO proj FROM permits WHERE id = p_permit;
  IF proj IS NULL THEN RETURN false; END IF;
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(proj));
  SELECT * INTO p FROM permits WHERE id = p_permit FOR UPDATE;
  IF p.reservation_state = 'settled' THEN RETURN true; END IF;
  periods := tollgate_permit_periods(p.reservation_periods, p.issued_at);
  PERFORM tollgate_add_spend(p.project_id, periods,
                             -(CASE WHEN p.reservation_state = 'active' THEN p.reserved_cost_micros ELSE 0 END), p_cost, 0);
  UPDATE permits SET reservation_state = 'settled', actual_cost_micros = p_cost, actual_input_tokens = p_input,
         actual_output_tokens = p_output, settled_at = p_at
   WHERE id = p_permit;
  RETURN true;
END;
$$;
