-- Up Migration

-- The request log (GET /v1/calls) lists a project's calls from their execution rows, filtered by the
-- API key and the job a call came through as well; both were known only to the permit's metadata
-- and the job row. Rows recorded before this migration keep NULL.
ALTER TABLE executions ADD COLUMN key_id text, ADD COLUMN job_id text;

-- Filters whose matches are rare would walk most of the project's rows on the (project_id,
-- created_at) index before a page fills. Partial indexes serve them and cost an ordinary completed
-- call nothing: calls that did not complete, calls joined to an intent, calls of a job.
CREATE INDEX executions_project_unsuccessful_idx ON executions (project_id, created_at DESC) WHERE status <> 'completed';
CREATE INDEX executions_project_workflow_idx ON executions (project_id, workflow_intent_id, created_at DESC) WHERE workflow_intent_id IS NOT NULL;
CREATE INDEX executions_project_job_idx ON executions (project_id, job_id) WHERE job_id IS NOT NULL;

-- Down Migration

DROP INDEX executions_project_job_idx;
DROP INDEX executions_project_workflow_idx;
DROP INDEX executions_project_unsuccessful_idx;
ALTER TABLE executions DROP COLUMN key_id, DROP COLUMN job_id;
