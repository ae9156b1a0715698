-- Up Migration
-- A call's events in a batch carry the fields they all share once, in the call's "event_defaults"
-- (src/db/repositories/events.ts, batchEvents): a field an event does not have comes from there.
-- Calls without "event_defaults" (full rows) insert as before.
CREATE OR REPLACE FUNCTION tollgate_insert_batch_events(p_calls jsonb, p_positions int[], p_project_path text[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH inserted AS (
    INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                        job_id, session_id, metadata)
    SELECT e->>'id', t.c #>> p_project_path,
           (CASE WHEN e ? 'timestamp' THEN e->>'timestamp' ELSE d->>'timestamp' END)::timestamptz,
           e->>'event_type',
           CASE WHEN e ? 'source' THEN e->>'source' ELSE d->>'source' END,
           CASE WHEN e ? 'phase' THEN e->>'phase' ELSE d->>'phase' END,
           CASE WHEN e ? 'provider' THEN e->>'provider' ELSE d->>'provider' END,
           CASE WHEN e ? 'model' THEN e->>'model' ELSE d->>'model' END,
           CASE WHEN e ? 'permit_id' THEN e->>'permit_id' ELSE d->>'permit_id' END,
           CASE WHEN e ? 'request_id' THEN e->>'request_id' ELSE d->>'request_id' END,
           CASE WHEN e ? 'job_id' THEN e->>'job_id' ELSE d->>'job_id' END,
           CASE WHEN e ? 'session_id' THEN e->>'session_id' ELSE d->>'session_id' END,
           coalesce(e->'metadata', '{}'::jsonb)
      FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(c, pos)
     CROSS JOIN LATERAL (SELECT t.c->'event_defaults' AS d) AS defaults
     CROSS JOIN LATERAL jsonb_array_elements(coalesce(t.c->'events', '[]'::jsonb)) WITH ORDINALITY AS u(e, ord)
     WHERE t.pos = ANY(p_positions)
     ORDER BY t.pos, u.ord
    RETURNING project_id, seq
  )
  INSERT INTO event_chain_pending (project_id, first_seq, seqs)
  SELECT project_id, min(seq), array_agg(seq ORDER BY seq) FROM inserted GROUP BY project_id;
END;
$$;

-- Down Migration
-- Back to migration 0107's body (full rows only).
CREATE OR REPLACE FUNCTION tollgate_insert_batch_events(p_calls jsonb, p_positions int[], p_project_path text[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH inserted AS (
    INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                        job_id, session_id, metadata)
    SELECT e->>'id', t.c #>> p_project_path, (e->>'timestamp')::timestamptz, e->>'event_type', e->>'source', e->>'phase',
           e->>'provider', e->>'model', e->>'permit_id', e->>'request_id', e->>'job_id', e->>'session_id',
           coalesce(e->'metadata', '{}'::jsonb)
      FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(c, pos)
     CROSS JOIN LATERAL jsonb_array_elements(coalesce(t.c->'events', '[]'::jsonb)) WITH ORDINALITY AS u(e, ord)
     WHERE t.pos = ANY(p_positions)
     ORDER BY t.pos, u.ord
    RETURNING project_id, seq
  )
  INSERT INTO event_chain_pending (project_id, first_seq, seqs)
  SELECT project_id, min(seq), array_agg(seq ORDER BY seq) FROM inserted GROUP BY project_id;
END;
$$;
