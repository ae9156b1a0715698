-- Up Migration

-- The call record and the permit, the two rows every governed call leaves, become range-partitioned
-- by week on their id (docs/decisions/time-partitions.md). Ids are UUIDv7 behind a kind prefix
-- (`permit_…`, `exec_req_…`), so an id's first 12 hex digits are its creation instant in
-- milliseconds: a range of ids is a range of time, every lookup by id prunes to one partition,
-- and the primary key stays the id. The id column takes the "C" collation so that the ranges
-- compare byte by byte whatever the database's default collation is.
--
-- This migration creates a partition for every week that holds existing rows and for the weeks up
-- to four ahead; from then on the partition maintenance (src/db/partitions.ts) creates the coming
-- weeks ahead of time, never the request path. A DEFAULT partition takes any row whose id is not
-- of the table's kind (none is written today) or falls in a week not created in time; retention
-- deletes such rows one by one instead of dropping them with a week.
--
-- PostgreSQL cannot enforce a unique index that does not contain the partition key, so
-- (project_id, idempotency_key) of permits and (project_id, seq) of records become plain indexes:
-- the first is already serialized by the permit route's advisory lock on the key, the second is
-- taken from a sequence.

CREATE FUNCTION pg_temp.week_partitions(p_table text, p_prefix text, p_source text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  first_ms bigint;
  last_ms bigint;
  week timestamptz;
  stop timestamptz;
BEGIN
  EXECUTE format(
    $q$SELECT min(('x' || substr(id, %1$s, 12))::bit(48)::bigint), max(('x' || substr(id, %1$s, 12))::bit(48)::bigint)
         FROM %2$I WHERE id ~ ('^' || %3$L || '[0-9a-f]{32}$')$q$,
    length(p_prefix) + 1, p_source, p_prefix)
  INTO first_ms, last_ms;
  week := date_trunc('week', least(coalesce(to_timestamp(first_ms / 1000.0), now()), now()) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  stop := date_trunc('week', greatest(coalesce(to_timestamp(last_ms / 1000.0), now()), now()) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '5 weeks';
  WHILE week < stop LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
      p_table || '_w' || to_char(week AT TIME ZONE 'UTC', 'YYYYMMDD'), p_table,
      p_prefix || lpad(to_hex((extract(epoch FROM week) * 1000)::bigint), 12, '0'),
      p_prefix || lpad(to_hex((extract(epoch FROM week + interval '1 week') * 1000)::bigint), 12, '0'));
    week := week + interval '1 week';
  END LOOP;
END
$$;

ALTER TABLE permit_attestations DROP CONSTRAINT permit_attestations_permit_id_fkey;
ALTER TABLE permit_attestations DROP CONSTRAINT permit_attestations_child_permit_id_fkey;
ALTER TABLE permit_evidence DROP CONSTRAINT permit_evidence_permit_id_fkey;
ALTER TABLE permit_usage_reports DROP CONSTRAINT permit_usage_reports_permit_id_fkey;

ALTER TABLE permits RENAME TO permits_unpartitioned;
CREATE TABLE permits (
  id text COLLATE "C" NOT NULL,
  project_id text NOT NULL,
  request_id text,
  route text NOT NULL,
  operation text,
  provider text,
  model text,
  workflow_id text,
  decision text NOT NULL CHECK (decision IN ('allow', 'deny', 'review', 'throttle')),
  reason_code text NOT NULL,
  display_reason text NOT NULL,
  decision_details jsonb NOT NULL,
  actions jsonb NOT NULL DEFAULT '[]'::jsonb,
  estimated_input_tokens integer NOT NULL DEFAULT 0,
  estimated_output_tokens integer NOT NULL DEFAULT 0,
  estimated_cost_micros bigint,
  reservation_state text NOT NULL DEFAULT 'none' CHECK (reservation_state IN ('none', 'active', 'settled', 'released', 'expired')),
  reservation_periods jsonb NOT NULL DEFAULT '[]'::jsonb,
  reserved_cost_micros bigint NOT NULL DEFAULT 0,
  actual_cost_micros bigint,
  actual_input_tokens integer,
  actual_output_tokens integer,
  settled_at timestamptz,
  released_at timestamptz,
  release_reason text,
  issued_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  revoked_by text,
  revocation_reason text,
  parent_permit_id text,
  idempotency_key text,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  closing jsonb,
  dispatch_deadline timestamptz
) PARTITION BY RANGE (id);
CREATE TABLE permits_default PARTITION OF permits DEFAULT;
SELECT pg_temp.week_partitions('permits', 'permit_', 'permits_unpartitioned');
INSERT INTO permits SELECT * FROM permits_unpartitioned;
DROP TABLE permits_unpartitioned;

ALTER TABLE permits ADD CONSTRAINT permits_pkey PRIMARY KEY (id);
CREATE INDEX permits_project_issued_idx ON permits (project_id, issued_at DESC, id DESC);
CREATE INDEX permits_project_request_idx ON permits (project_id, request_id);
CREATE INDEX permits_project_workflow_idx ON permits (project_id, workflow_id) WHERE workflow_id IS NOT NULL;
CREATE INDEX permits_active_expiry_idx ON permits (expires_at) WHERE reservation_state = 'active';
CREATE INDEX permits_project_idempotency_idx ON permits (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX permits_project_meta_idempotency_idx ON permits (project_id, (metadata ->> 'idempotency_key')) WHERE metadata ? 'idempotency_key';
CREATE INDEX permits_in_flight_idx ON permits (dispatch_deadline) WHERE closing IS NOT NULL;
ALTER TABLE permits ADD CONSTRAINT permits_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
ALTER TABLE permits ADD CONSTRAINT permits_parent_permit_id_fkey FOREIGN KEY (parent_permit_id) REFERENCES permits(id);
ALTER TABLE permit_attestations ADD CONSTRAINT permit_attestations_permit_id_fkey FOREIGN KEY (permit_id) REFERENCES permits(id);
ALTER TABLE permit_attestations ADD CONSTRAINT permit_attestations_child_permit_id_fkey FOREIGN KEY (child_permit_id) REFERENCES permits(id);
ALTER TABLE permit_evidence ADD CONSTRAINT permit_evidence_permit_id_fkey FOREIGN KEY (permit_id) REFERENCES permits(id);
ALTER TABLE permit_usage_reports ADD CONSTRAINT permit_usage_reports_permit_id_fkey FOREIGN KEY (permit_id) REFERENCES permits(id);

ALTER TABLE executions RENAME TO executions_unpartitioned;
CREATE TABLE executions (
  id text COLLATE "C" NOT NULL,
  project_id text NOT NULL,
  route text NOT NULL CHECK (route IN ('executions', 'execute', 'proxy')),
  operation text NOT NULL,
  mode text NOT NULL CHECK (mode IN ('sync', 'stream')),
  status text NOT NULL CHECK (status IN ('completed', 'failed', 'denied')),
  status_code integer NOT NULL,
  permit_id text,
  provider text,
  model text,
  workflow_intent_id text,
  idempotency_key text,
  input_tokens integer NOT NULL DEFAULT 0,
  output_tokens integer NOT NULL DEFAULT 0,
  cost_usd_micros bigint NOT NULL DEFAULT 0,
  estimated_final boolean NOT NULL DEFAULT false,
  error_code text,
  created_at timestamptz NOT NULL,
  completed_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  envelope jsonb NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  key_id text,
  job_id text,
  seq bigint,
  lifecycle jsonb
) PARTITION BY RANGE (id);
CREATE TABLE executions_default PARTITION OF executions DEFAULT;
SELECT pg_temp.week_partitions('executions', 'exec_req_', 'executions_unpartitioned');
INSERT INTO executions SELECT * FROM executions_unpartitioned;
DROP TABLE executions_unpartitioned;

ALTER TABLE executions ADD CONSTRAINT executions_pkey PRIMARY KEY (id);
CREATE INDEX executions_project_created_idx ON executions (project_id, created_at DESC);
CREATE INDEX executions_permit_idx ON executions (permit_id) WHERE permit_id IS NOT NULL;
CREATE INDEX executions_project_unsuccessful_idx ON executions (project_id, created_at DESC) WHERE status <> 'completed';
CREATE INDEX executions_project_workflow_idx ON executions (project_id, workflow_intent_id, created_at DESC) WHERE workflow_intent_id IS NOT NULL;
CREATE INDEX executions_project_job_idx ON executions (project_id, job_id) WHERE job_id IS NOT NULL;
CREATE INDEX executions_project_seq_idx ON executions (project_id, seq) WHERE seq IS NOT NULL;
ALTER TABLE executions ADD CONSTRAINT executions_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
