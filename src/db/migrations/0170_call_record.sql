-- Up Migration

-- One governed call, one record (docs/decisions/call-record.md).
--
-- A call dispatched by the in-process pipeline no longer writes its lifecycle as event rows
-- (permit.allowed ... request.completed, eight rows and eight chain rows per call): its execution
-- row carries what those events held (`lifecycle`: the dispatch instant, the surface's routing and
-- start details, every provider attempt), and readers derive the same events from it and from the
-- permit (src/executions/lifecycle.ts). The row is chained as one leaf, in the events' chain.

-- A record's derived events take the seqs after its own (seq + 1, + 2, ...), so events and records
-- share one order: every seq the sequence hands out leaves room for a record's events.
ALTER SEQUENCE events_seq_seq INCREMENT BY 64;

-- `seq`: the record's place in its project's log (NULL for records without derived events: denied
-- calls, jobs, rows recorded before this migration). `lifecycle`: see src/executions/lifecycle.ts.
ALTER TABLE executions ADD COLUMN seq bigint, ADD COLUMN lifecycle jsonb;
CREATE UNIQUE INDEX executions_project_seq_idx ON executions (project_id, seq) WHERE seq IS NOT NULL;

-- event_chain.seq is now the chained event's or record's seq (events.seq or executions.seq).
COMMENT ON COLUMN event_chain.seq IS 'events.seq of a chained event, or executions.seq of a chained call record';

-- The in-flight marker moves onto the permit: `closing` (what reconciliation needs to close the
-- call if its process dies, src/pipeline/inflight.ts) and `dispatch_deadline` are written with the
-- permit and cleared by the update that settles or releases it, which every recorded call makes
-- anyway. The partial index holds only calls in flight.
ALTER TABLE permits ADD COLUMN closing jsonb, ADD COLUMN dispatch_deadline timestamptz;
CREATE INDEX permits_in_flight_idx ON permits (dispatch_deadline) WHERE closing IS NOT NULL;

UPDATE permits p SET closing = i.closing, dispatch_deadline = i.deadline
  FROM inflight_calls i WHERE i.permit_id = p.id;
DROP TABLE inflight_calls;

-- Down Migration
CREATE TABLE inflight_calls (
  execution_id  text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects(id),
  permit_id     text NOT NULL,
  started_at    timestamptz NOT NULL,
  deadline      timestamptz NOT NULL,
  closing       jsonb NOT NULL
);
CREATE INDEX inflight_calls_deadline_idx ON inflight_calls (deadline);
INSERT INTO inflight_calls (execution_id, project_id, permit_id, started_at, deadline, closing)
SELECT p.closing->'input'->>'executionId', p.project_id, p.id, p.issued_at, p.dispatch_deadline, p.closing
  FROM permits p WHERE p.closing IS NOT NULL;
DROP INDEX permits_in_flight_idx;
ALTER TABLE permits DROP COLUMN closing, DROP COLUMN dispatch_deadline;
DROP INDEX executions_project_seq_idx;
ALTER TABLE executions DROP COLUMN seq, DROP COLUMN lifecycle;
ALTER SEQUENCE events_seq_seq INCREMENT BY 1;
