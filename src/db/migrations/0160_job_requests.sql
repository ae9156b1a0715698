-- Up Migration

-- A job's execution request, stored once at submission (the claim check): the jobWorkflow's input
-- and its activities' inputs carry the job id, never the request, so a body as large as the route
-- accepts runs (Temporal refuses payloads over a few MiB) and the workflow's history stays bounded
-- whatever the caller sends. A table of its own keeps the job listing and reads (SELECT * FROM jobs)
-- from carrying the request. `json`, not `jsonb`: the request is read back exactly as it was sent.
CREATE TABLE job_requests (
  job_id   text PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  request  json NOT NULL
);

-- Down Migration
DROP TABLE job_requests;
