-- Up Migration

-- The in-process governed-call pipeline (docs/decisions/governed-call-pipeline.md): an allowed
-- call costs two statements, one before dispatch (tollgate_begin_call) and one after
-- (tollgate_finish_call), and neither waits on the per-project hash chain.

-- 1. Events are inserted unchained; a sequencer (src/events/chainer.ts) chains each project's
--    events in `seq` order, in batches, shortly after. `chain_pos` is the event's position in its
--    project's chain (NULL until chained); rows chained before this migration keep their order.
ALTER TABLE events ALTER COLUMN prev_hash DROP NOT NULL;
ALTER TABLE events ALTER COLUMN hash DROP NOT NULL;
ALTER TABLE events ADD COLUMN chain_pos bigint;
UPDATE events SET chain_pos = seq;
CREATE UNIQUE INDEX events_project_chain_idx ON events (project_id, chain_pos) WHERE chain_pos IS NOT NULL;
CREATE INDEX events_unchained_idx ON events (project_id, seq) WHERE chain_pos IS NULL;

-- Inserts one project's events, unchained, in array order (seq drawn in that order). No lock.
CREATE FUNCTION tollgate_insert_events(p_project text, p_events jsonb)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                      job_id, session_id, metadata)
  SELECT e->>'id', p_project, (e->>'timestamp')::timestamptz, e->>'event_type', e->>'source', e->>'phase',
         e->>'provider', e->>'model', e->>'permit_id', e->>'request_id', e->>'job_id', e->>'session_id',
         coalesce(e->'metadata', '{}'::jsonb)
    FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, ord)
   ORDER BY ord;
$$;

-- The old chained append now inserts unchained too (every caller gets the cheap path).
DROP FUNCTION tollgate_append_events(text, jsonb);
CREATE FUNCTION tollgate_append_events(p_project text, p_events jsonb)
RETURNS void LANGUAGE sql AS $$ SELECT tollgate_insert_events(p_project, p_events); $$;

-- 2. Calls in flight: written with the permit before dispatch, deleted when the call is recorded.
--    A row whose deadline passed belongs to a process that died mid-call; the reconciliation
--    workflow closes it (recorded failed, dispatch_interrupted).
CREATE TABLE inflight_calls (
  execution_id  text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects(id),
  permit_id     text NOT NULL,
  started_at    timestamptz NOT NULL,
  deadline      timestamptz NOT NULL,
  -- What closing the call needs (src/pipeline/inflight.ts): the execution input without its
  -- request body, the pre-dispatch estimate, the idempotency scope.
  closing       jsonb NOT NULL
);
CREATE INDEX inflight_calls_deadline_idx ON inflight_calls (deadline);

-- 3. Before dispatch, one statement: the optimistic allow (as tollgate_reserve_allow: lock, re-check
--    plan, policy version and counters against the allow's bounds, permit, reservation, rate
--    windows), the permit and dispatch-start events, and the in-flight row.
CREATE FUNCTION tollgate_begin_call(p_lock_class int, p_project text, p_plan text, p_policy_version int, p_permit jsonb,
                                    p_spend jsonb, p_quota_max bigint, p_cost bigint, p_rates jsonb, p_events jsonb,
                                    p_inflight jsonb)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock_class, hashtext(p_project));
  IF EXISTS (SELECT 1 FROM permits WHERE id = p_permit->>'id') THEN RETURN 'exists'; END IF;
  IF (SELECT plan FROM projects WHERE id = p_project) IS DISTINCT FROM p_plan
     OR coalesce((SELECT version FROM project_policies WHERE project_id = p_project), 0) <> p_policy_version THEN
    RETURN 'stale';
  END IF;
  IF EXISTS (
       SELECT 1 FROM jsonb_array_elements(p_spend) AS k
         JOIN spend_counters c ON c.project_id = p_project AND c.period_kind = k->>'kind' AND c.period_start = (k->>'start')::date
        WHERE (k->>'max_total' IS NOT NULL AND c.settled_micros + c.reserved_micros > (k->>'max_total')::bigint)
           OR (k->>'kind' = 'month' AND p_quota_max IS NOT NULL AND c.requests > p_quota_max))
     OR EXISTS (
       SELECT 1 FROM jsonb_array_elements(p_rates) AS r
         JOIN rate_limit_windows w ON w.project_id = p_project AND w.limit_id = r->>'limit_id'
          AND w.window_seconds = (r->>'window_seconds')::int AND w.window_start = (r->>'window_start')::timestamptz
        WHERE w.used > (r->>'max_used')::bigint) THEN
    RETURN 'stale';
  END IF;
  INSERT INTO permits SELECT * FROM jsonb_populate_record(NULL::permits, p_permit);
  PERFORM tollgate_add_spend(p_project, p_spend, p_cost, 0, 1);
  INSERT INTO rate_limit_windows (project_id, limit_id, window_seconds, window_start, used)
  SELECT p_project, r->>'limit_id', (r->>'window_seconds')::int, (r->>'window_start')::timestamptz, (r->>'amount')::bigint
    FROM jsonb_array_elements(p_rates) AS r
  ON CONFLICT (project_id, limit_id, window_seconds, window_start) DO UPDATE SET used = rate_limit_windows.used + EXCLUDED.used;
  PERFORM tollgate_insert_events(p_project, p_events);
  IF p_inflight IS NOT NULL THEN
    INSERT INTO inflight_calls (execution_id, project_id, permit_id, started_at, deadline, closing)
    VALUES (p_inflight->>'execution_id', p_project, p_permit->>'id', (p_inflight->>'started_at')::timestamptz,
            (p_inflight->>'deadline')::timestamptz, p_inflight->'closing');
  END IF;
  RETURN 'applied';
END;
$$;

-- The old optimistic allow is the same statement without an in-flight row.
DROP FUNCTION tollgate_reserve_allow(int, text, text, int, jsonb, jsonb, bigint, bigint, jsonb, jsonb);
CREATE FUNCTION tollgate_reserve_allow(p_lock_class int, p_project text, p_plan text, p_policy_version int, p_permit jsonb,
                                       p_spend jsonb, p_quota_max bigint, p_cost bigint, p_rates jsonb, p_events jsonb)
RETURNS text LANGUAGE sql AS $$
  SELECT tollgate_begin_call(p_lock_class, p_project, p_plan, p_policy_version, p_permit, p_spend, p_quota_max, p_cost,
                             p_rates, p_events, NULL);
$$;

-- 4. After dispatch (or when reconciliation closes an interrupted call), one statement: the
--    executions row (the exactly-once guard: when it already exists nothing else is written and
--    false is returned), spend settled (p_settle: {"cost","input","output"}) or released
--    (p_release_reason), the completion events, the in-flight row removed, and the idempotency key
--    completed with the stored response (p_idem: {"scope","key","status","headers"} + p_idem_body;
--    a NULL status only marks the key completed, as for streams; {"release": true} forgets the
--    claim instead, so a retry runs again: the proxies' answer for failures they do not replay).
CREATE FUNCTION tollgate_finish_call(p_lock_class int, p_row jsonb, p_events jsonb, p_settle jsonb, p_release_reason text,
                                     p_idem jsonb, p_idem_body bytea)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  proj text := p_row->>'project_id';
BEGIN
  -- FROM-clause form: `(jsonb_populate_record(...)).*` would run the function once per column.
  INSERT INTO executions
  SELECT * FROM jsonb_populate_record(NULL::executions, p_row || jsonb_build_object('recorded_at', now()))
  ON CONFLICT (id) DO NOTHING;
  IF NOT FOUND THEN RETURN false; END IF;
  IF p_settle IS NOT NULL THEN
    PERFORM tollgate_settle_permit(p_lock_class, p_row->>'permit_id', (p_settle->>'cost')::bigint,
                                   (p_settle->>'input')::int, (p_settle->>'output')::int, now());
  ELSIF p_release_reason IS NOT NULL THEN
    PERFORM tollgate_release_permit(p_lock_class, p_row->>'permit_id', 'released', p_release_reason, now());
  END IF;
  IF jsonb_array_length(p_events) > 0 THEN
    PERFORM tollgate_insert_events(proj, p_events);
  END IF;
  DELETE FROM inflight_calls WHERE execution_id = p_row->>'id';
  IF p_idem IS NOT NULL AND (p_idem->>'release')::boolean IS TRUE THEN
    DELETE FROM idempotency_keys WHERE project_id = proj AND scope = p_idem->>'scope' AND key = p_idem->>'key' AND state = 'in_flight';
  ELSIF p_idem IS NOT NULL THEN
    UPDATE idempotency_keys
       SET state = 'completed', completed_at = now(), resource_id = p_row->>'id',
           response_status = (p_idem->>'status')::int,
           response_headers = CASE WHEN p_idem->>'status' IS NULL THEN NULL ELSE p_idem->'headers' END,
           response_body = CASE WHEN p_idem->>'status' IS NULL THEN NULL ELSE p_idem_body END
     WHERE project_id = proj AND scope = p_idem->>'scope' AND key = p_idem->>'key';
  END IF;
  RETURN true;
END;
$$;

-- 5. Batches of the two (src/pipeline/batcher.ts): one statement, one commit, for every
--    call that queued while the previous batch ran, in order; each call sees the writes of the
--    calls before it, so caps and rate limits hold call by call. The batcher sends calls sorted by
--    project (stable), so every batch takes project locks in the same order and two batches can
--    never wait on each other in a cycle.
--    p_calls: [{"project","plan","policy_version","permit","spend","quota_max","cost","rates","events","inflight"}]
CREATE FUNCTION tollgate_begin_calls(p_lock_class int, p_calls jsonb)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  c jsonb;
  out text[] := '{}';
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_calls) LOOP
    out := out || tollgate_begin_call(p_lock_class, c->>'project', c->>'plan', (c->>'policy_version')::int, c->'permit', c->'spend',
                                      (c->>'quota_max')::bigint, (c->>'cost')::bigint, c->'rates', c->'events',
                                      CASE WHEN jsonb_typeof(c->'inflight') = 'object' THEN c->'inflight' END);
  END LOOP;
  RETURN out;
END;
$$;

--    p_calls: [{"row","events","settle","release_reason","idem","idem_body" (base64)}]
CREATE FUNCTION tollgate_finish_calls(p_lock_class int, p_calls jsonb)
RETURNS boolean[] LANGUAGE plpgsql AS $$
DECLARE
  c jsonb;
  out boolean[] := '{}';
BEGIN
  FOR c IN SELECT value FROM jsonb_array_elements(p_calls) LOOP
    out := out || tollgate_finish_call(p_lock_class, c->'row', c->'events',
                                       CASE WHEN jsonb_typeof(c->'settle') = 'object' THEN c->'settle' END,
                                       c->>'release_reason',
                                       CASE WHEN jsonb_typeof(c->'idem') = 'object' THEN c->'idem' END,
                                       decode(c->>'idem_body', 'base64'));
  END LOOP;
  RETURN out;
END;
$$;

-- Down Migration
DROP FUNCTION tollgate_finish_calls(int, jsonb);
DROP FUNCTION tollgate_begin_calls(int, jsonb);
DROP FUNCTION tollgate_finish_call(int, jsonb, jsonb, jsonb, text, jsonb, bytea);
DROP FUNCTION tollgate_reserve_allow(int, text, text, int, jsonb, jsonb, bigint, bigint, jsonb, jsonb);
DROP FUNCTION tollgate_begin_call(int, text, text, int, jsonb, jsonb, bigint, bigint, jsonb, jsonb, jsonb);
DROP TABLE inflight_calls;
DROP FUNCTION tollgate_append_events(text, jsonb);
DROP FUNCTION tollgate_insert_events(text, jsonb);
DROP INDEX events_unchained_idx;
DROP INDEX events_project_chain_idx;
ALTER TABLE events DROP COLUMN chain_pos;
