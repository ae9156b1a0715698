CREATE OR REPLACE FUNCTION tollgate_insert_batch_events(p_calls jsonb, p_positions int[], p_project_path text[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH inserted AS (
    INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                        job_id, session_id, metadata)
    SELECT e.id, t.c #>> p_project_path, e.timestamp, e.event_type, e.source, e.phase, e.provider, e.model,
           e.permit_id, e.request_id, e.job_id, e.session_id, coalesce(e.metadata, '{}'::jsonb)
      FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS t(c, pos)
     CROSS JOIN LATERAL jsonb_array_elements(coalesce(t.c->'events', '[]'::jsonb)) WITH ORDINALITY AS u(own, ord)
     CROSS JOIN LATERAL jsonb_to_record(coalesce(t.c->'event_defaults', '{}'::jsonb) || u.own)
          AS e(id text, timestamp timestamptz, event_type text, source text, phase text, provider text, model text,
               permit_id text, request_id text, job_id text, session_id text, metadata jsonb)
     WHERE t.pos = ANY(p_positions)
     ORDER BY t.pos, u.ord
    RETURNING project_id, seq
  )
  INSERT INTO event_chain_pending (project_id, first_seq, seqs)
  SELECT project_id, min(seq), array_agg(seq ORDER BY seq) FROM inserted GROUP BY project_id;
END;
$$;
