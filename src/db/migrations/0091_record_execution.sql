-- Up Migration

-- Records a finished execution in one statement: inserts the executions row (p_row: its columns
-- as JSON, recorded_at = now()) and, only when this call inserted it, appends its completion
-- events to the project's hash chain. Returns false when the row already existed (a retried
-- recording), in which case nothing is written.
CREATE FUNCTION tollgate_record_execution(p_row jsonb, p_events jsonb)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO executions
  SELECT (jsonb_populate_record(NULL::executions, p_row || jsonb_build_object('recorded_at', now()))).*
  ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN RETURN false; END IF;
  IF jsonb_array_length(p_events) > 0 THEN
    PERFORM tollgate_append_events(p_row->>'project_id', p_events);
  END IF;
  RETURN true;
END;
$$;

-- Down Migration
DROP FUNCTION tollgate_record_execution(jsonb, jsonb);
