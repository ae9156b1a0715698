-- Up Migration

-- Whether the job opted in to re-dispatch after a worker death (`retry_on_interrupt`,
-- docs/decisions/jobs-at-most-one-call.md): stored with the job so GET /v1/jobs/{id} shows the
-- trade-off the caller chose, not only the workflow that acts on it.
ALTER TABLE jobs ADD COLUMN retry_on_interrupt boolean NOT NULL DEFAULT false;

-- Down Migration
ALTER TABLE jobs DROP COLUMN retry_on_interrupt;
