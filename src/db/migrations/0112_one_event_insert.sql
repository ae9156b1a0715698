-- Up Migration
-- One insert for events: appendEvents (src/db/repositories/events.ts) now inserts through
-- tollgate_insert_batch_events (migration 0107), as the batch statements do, all projects in one
-- statement. The per-project tollgate_insert_events (migrations 0103, 0106) was a second copy of
-- that insert; it stays, for processes of the previous version still running during an upgrade,
-- as a call of the batch insert.
CREATE OR REPLACE FUNCTION tollgate_insert_events(p_project text, p_events jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tollgate_insert_batch_events(jsonb_build_array(jsonb_build_object('project', p_project, 'events', p_events)), '{1}', '{project}');
END;
$$;

-- Down Migration
-- The body of migration 0106.
CREATE OR REPLACE FUNCTION tollgate_insert_events(p_project text, p_events jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH inserted AS (
    INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                        job_id, session_id, metadata)
    SELECT e->>'id', p_project, (e->>'timestamp')::timestamptz, e->>'event_type', e->>'source', e->>'phase',
           e->>'provider', e->>'model', e->>'permit_id', e->>'request_id', e->>'job_id', e->>'session_id',
           coalesce(e->'metadata', '{}'::jsonb)
      FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, ord)
     ORDER BY ord
    RETURNING seq
  )
  INSERT INTO event_chain_pending (project_id, first_seq, seqs)
  SELECT p_project, min(seq), array_agg(seq ORDER BY seq) FROM inserted HAVING count(*) > 0;
END;
$$;
