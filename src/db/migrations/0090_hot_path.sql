-- Up Migration

-- Hot-path functions: each does its per-project locked work in one statement, so a lock is held
-- only while PostgreSQL executes it (no client round trip while holding it). Each statement in a
-- PL/pgSQL function takes a fresh snapshot (READ COMMITTED), so reads after the lock see every
-- commit made under it.

-- Appends events of one project to its hash chain: takes the chain lock, reads the head, and for
-- each event (in array order) draws seq, computes
--   hash = sha256(prev_hash || canonical)   with canonical = c_a || prev_hash || c_b || seq || c_c
-- (the caller splits the RFC 8785 canonical JSON around the prev_hash and seq values, which only
-- this function knows) and inserts it. Returns (seq, prev_hash, hash) per event, in order.
CREATE FUNCTION tollgate_append_events(p_project text, p_events jsonb)
RETURNS TABLE (out_seq bigint, out_prev_hash text, out_hash text)
LANGUAGE plpgsql AS $$
DECLARE
  e jsonb;
  head text;
  s bigint;
  h text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(p_project));
  SELECT ev.hash INTO head FROM events ev WHERE ev.project_id = p_project ORDER BY ev.seq DESC LIMIT 1;
  head := coalesce(head, repeat('0', 64));
  FOR e IN SELECT value FROM jsonb_array_elements(p_events) LOOP
    s := nextval(pg_get_serial_sequence('events', 'seq'));
    h := encode(sha256(convert_to(head || (e->>'c_a') || head || (e->>'c_b') || s::text || (e->>'c_c'), 'UTF8')), 'hex');
    INSERT INTO events (seq, id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                        job_id, session_id, metadata, prev_hash, hash)
    VALUES (s, e->>'id', p_project, (e->>'timestamp')::timestamptz, e->>'event_type', e->>'source', e->>'phase',
            e->>'provider', e->>'model', e->>'permit_id', e->>'request_id', e->>'job_id', e->>'session_id',
            coalesce(e->'metadata', '{}'::jsonb), head, h);
    out_seq := s;
    out_prev_hash := head;
    out_hash := h;
    RETURN NEXT;
    head := h;
  END LOOP;
END;
$$;

-- Adds deltas to a project's spend rows (created on first use). p_periods: [{"kind","start"}].
CREATE FUNCTION tollgate_add_spend(p_project text, p_periods jsonb, p_reserved bigint, p_settled bigint, p_requests bigint)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO spend_counters (project_id, period_kind, period_start, reserved_micros, settled_micros, requests)
  SELECT p_project, k->>'kind', (k->>'start')::date, p_reserved, p_settled, p_requests FROM jsonb_array_elements(p_periods) AS k
  ON CONFLICT (project_id, period_kind, period_start) DO UPDATE SET
    reserved_micros = spend_counters.reserved_micros + EXCLUDED.reserved_micros,
    settled_micros = spend_counters.settled_micros + EXCLUDED.settled_micros,
    requests = spend_counters.requests + EXCLUDED.requests;
$$;

-- Settles a permit's reservation under the governance lock (idempotent: a settled permit is left
-- alone). An active reservation converts to settled spend; usage arriving after a release or
-- expiry is still booked as settled spend; a permit booked without periods settles into the UTC
-- periods of its issue time (date_trunc 'week' is the ISO Monday week). Returns false when the
-- permit does not exist.
CREATE FUNCTION tollgate_settle_permit(p_lock_class int, p_permit text, p_cost bigint, p_input int, p_output int, p_at timestamptz)
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
  periods := CASE WHEN jsonb_array_length(p.reservation_periods) > 0 THEN p.reservation_periods ELSE (
    SELECT jsonb_agg(jsonb_build_object('kind', k, 'start', to_char(date_trunc(k, p.issued_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')) ORDER BY o)
      FROM unnest(ARRAY['day', 'week', 'month', 'quarter']) WITH ORDINALITY AS t(k, o)) END;
  PERFORM tollgate_add_spend(p.project_id, periods,
                             -(CASE WHEN p.reservation_state = 'active' THEN p.reserved_cost_micros ELSE 0 END), p_cost, 0);
  UPDATE permits SET reservation_state = 'settled', actual_cost_micros = p_cost, actual_input_tokens = p_input,
         actual_output_tokens = p_output, settled_at = p_at, reservation_periods = periods
   WHERE id = p_permit;
  RETURN true;
END;
$$;

-- Releases an active reservation (state 'released' or 'expired') under the governance lock.
-- Returns true when it released something; a permit without an active reservation is left alone.
CREATE FUNCTION tollgate_release_permit(p_lock_class int, p_permit text, p_state text, p_reason text, p_at timestamptz)
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
  PERFORM tollgate_add_spend(p.project_id, p.reservation_periods, -p.reserved_cost_micros, 0, 0);
  UPDATE permits SET reservation_state = p_state, released_at = p_at, release_reason = p_reason WHERE id = p_permit;
  RETURN true;
END;
$$;

-- The optimistic allow of governance.evaluate in one statement: takes the governance lock, and
-- applies the allow only when the permit id is new, plan and policy version are those it was
-- decided with, and every counter is still within the bounds computed for it (allowBounds in
-- src/governance/evaluate.ts): then inserts the permit, reserves the estimate on every period row,
-- counts the request, consumes the rate windows and appends the permit events. Returns 'applied',
-- 'exists' (the permit id is already stored) or 'stale' (nothing written; decide again under the lock).
--   p_spend: [{"kind","start","max_total"}]   p_rates: [{"limit_id","window_seconds","window_start","amount","max_used"}]
CREATE FUNCTION tollgate_reserve_allow(p_lock_class int, p_project text, p_plan text, p_policy_version int, p_permit jsonb,
                                       p_spend jsonb, p_quota_max bigint, p_cost bigint, p_rates jsonb, p_events jsonb)
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
  PERFORM tollgate_append_events(p_project, p_events);
  RETURN 'applied';
END;
$$;

-- Down Migration
DROP FUNCTION tollgate_reserve_allow(int, text, text, int, jsonb, jsonb, bigint, bigint, jsonb, jsonb);
DROP FUNCTION tollgate_release_permit(int, text, text, text, timestamptz);
DROP FUNCTION tollgate_settle_permit(int, text, bigint, int, int, timestamptz);
DROP FUNCTION tollgate_add_spend(text, jsonb, bigint, bigint, bigint);
DROP FUNCTION tollgate_append_events(text, jsonb);
