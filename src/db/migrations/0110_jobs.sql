-- Up Migration

-- Async jobs (POST /v1/jobs). One row per job, one jobWorkflow per row (workflows/job.ts). The
-- status moves queued → processing → completed | failed, or to cancelled from queued/processing;
-- each move is a conditional UPDATE in the transaction that appends its job.* timeline event, so a
-- retried activity moves it (and writes the event) once. `request_id` is the job's execution id
-- (exec_req_…): the request timeline and the executions row use it.
CREATE TABLE jobs (
  id                   text PRIMARY KEY,
  project_id           text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  status               text NOT NULL CHECK (status IN ('queued', 'processing', 'completed', 'failed', 'cancelled')),
  request_id           text NOT NULL,
  permit_id            text NOT NULL,
  operation            text NOT NULL,
  provider             text,
  model                text,
  metadata             jsonb NOT NULL DEFAULT '{}'::jsonb,
  idempotency_key      text,
  attempts             int NOT NULL DEFAULT 0,
  result               jsonb,
  error_code           text,
  cancel_requested_at  timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  queued_at            timestamptz,
  started_at           timestamptz,
  completed_at         timestamptz
);

-- Listing (newest first; ids are time-ordered uuidv7), the processing count of the per-project
-- limit, and the oldest queued job a freed slot wakes.
CREATE INDEX jobs_project_list_idx ON jobs (project_id, id DESC);
CREATE INDEX jobs_project_processing_idx ON jobs (project_id) WHERE status = 'processing';
CREATE INDEX jobs_project_queued_idx ON jobs (project_id, id) WHERE status = 'queued';

-- Down Migration
DROP TABLE jobs;
