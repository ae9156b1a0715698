-- Up Migration
-- A LANGUAGE sql function that is not inlined is planned again on every call; a plpgsql function
-- keeps its statements' plans for the session. tollgate_insert_events runs in every begin and
-- finish batch, and tollgate_rate_used once per limit per batch: as SQL functions their planning
-- was most of their cost when a batch holds one call (c=1: 1.1 → 0.6 ms of PostgreSQL CPU per
-- governed call for the event inserts, `C=1 npm run bench:pipeline-db`). Same bodies, same results.
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

CREATE OR REPLACE FUNCTION tollgate_rate_used(p_project text, p_limit_id text, p_seconds int, p_at timestamptz)
RETURNS bigint LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT coalesce(sum(amount), 0)::bigint FROM rate_limit_events
           WHERE project_id = p_project AND limit_id = p_limit_id AND window_seconds = p_seconds
             AND bucket >= tollgate_rate_bucket(p_at - make_interval(secs => p_seconds), p_seconds)
             AND at > p_at - make_interval(secs => p_seconds));
END;
$$;

-- Down Migration
CREATE OR REPLACE FUNCTION tollgate_rate_used(p_project text, p_limit_id text, p_seconds int, p_at timestamptz)
RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT coalesce(sum(amount), 0)::bigint FROM rate_limit_events
   WHERE project_id = p_project AND limit_id = p_limit_id AND window_seconds = p_seconds
     AND bucket >= tollgate_rate_bucket(p_at - make_interval(secs => p_seconds), p_seconds)
     AND at > p_at - make_interval(secs => p_seconds);
$$;

CREATE OR REPLACE FUNCTION tollgate_insert_events(p_project text, p_events jsonb)
RETURNS void LANGUAGE sql AS $$
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
$$;
