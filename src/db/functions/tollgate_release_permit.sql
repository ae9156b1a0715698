CREATE OR REPLACE FUNCTION tollgate_release_permit(p_lock_class int, p_permit text, p_state text, p_reason text, p_at timestamptz)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  proj text;
  p permits%ROWTYPE;
BEGIN
  SELECT project_id INTO proj FROM permits WHERE id = p_permit;
  IF proj IS NULL THEN RETURN false; END IF;
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(proj));
  SELECT * INTO p FROM permits WHERE id = p_permit FOR UPDATE;
  IF p.reservation_state <> 'active' THEN RETURN false; END IF;
  PERFORM tollgate_add_spend(p.project_id, tollgate_permit_periods(p.reservation_periods, p.issued_at), -p.reserved_cost_micros, 0, 0);
  UPDATE permits SET reservation_state = p_state, released_at = p_at, release_reason = p_reason WHERE id = p_permit;
  RETURN true;
END;
$$;
