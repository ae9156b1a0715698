-- Up Migration

-- One row per finished governed execution (POST /v1/executions, POST /v1/execute). Written once,
-- by the executionWorkflow's recording step, keyed by the execution id: the insert is the
-- idempotency guard of recording (a retried recording finds the row and records nothing twice).
CREATE TABLE executions (
  id                  text PRIMARY KEY,
  project_id          text NOT NULL REFERENCES projects(id),
  route               text NOT NULL CHECK (route IN ('executions', 'execute')),
  operation           text NOT NULL,
  mode                text NOT NULL CHECK (mode IN ('sync', 'stream')),
  status              text NOT NULL CHECK (status IN ('completed', 'failed', 'denied')),
  status_code         integer NOT NULL,
  permit_id           text,
  provider            text,
  model               text,
  workflow_intent_id  text,
  idempotency_key     text,
  input_tokens        integer NOT NULL DEFAULT 0,
  output_tokens       integer NOT NULL DEFAULT 0,
  cost_usd_micros     bigint NOT NULL DEFAULT 0,
  estimated_final     boolean NOT NULL DEFAULT false,
  error_code          text,
  created_at          timestamptz NOT NULL,
  completed_at        timestamptz NOT NULL,
  duration_ms         integer NOT NULL,
  envelope            jsonb NOT NULL,
  recorded_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX executions_project_created_idx ON executions (project_id, created_at DESC);
CREATE INDEX executions_permit_idx ON executions (permit_id) WHERE permit_id IS NOT NULL;

-- Down Migration
DROP TABLE executions;
