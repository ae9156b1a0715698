-- Up Migration

-- Signing keys for integrity signatures (workflow declarations and amendments). One row per
-- purpose; generated once when TOLLGATE_MASTER_KEY is not set (with it, the key is derived and this
-- table is not used). The private key never leaves the server.
CREATE TABLE integrity_keys (
  kid              text PRIMARY KEY,
  purpose          text NOT NULL UNIQUE,
  algorithm        text NOT NULL CHECK (algorithm = 'Ed25519'),
  public_key_der   bytea NOT NULL,
  private_key_der  bytea NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);

-- One declared workflow intent per (project, workflow_id). The intentWorkflow owns the live state;
-- activities mirror every change here so listings and readbacks work after the workflow closes.
CREATE TABLE workflow_intents (
  id                         text PRIMARY KEY,
  project_id                 text NOT NULL REFERENCES projects(id),
  workflow_id                text NOT NULL,
  status                     text NOT NULL CHECK (status IN ('active', 'completed', 'expired', 'rejected')),
  version                    integer NOT NULL DEFAULT 1,
  expected_calls             integer,
  max_calls                  integer,
  actual_calls               integer NOT NULL DEFAULT 0,
  intent                     jsonb NOT NULL,
  canonical_intent_hash      text NOT NULL,
  projected_cost             jsonb NOT NULL,
  reason_code                text,
  decision_details           jsonb,
  declared_by                jsonb NOT NULL,
  declared_via               jsonb NOT NULL,
  declaration_signature_b64  text,
  signature_kid              text,
  budget_envelope_id         text,
  declared_at                timestamptz NOT NULL,
  expires_at                 timestamptz,
  completed_at               timestamptz,
  expired_at                 timestamptz,
  reconciliation             jsonb,
  temporal_workflow_id       text,
  temporal_first_run_id      text,
  updated_at                 timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, workflow_id)
);
CREATE INDEX workflow_intents_list_idx ON workflow_intents (project_id, declared_at DESC, id DESC);
CREATE INDEX workflow_intents_status_idx ON workflow_intents (project_id, status, declared_at DESC, id DESC);

CREATE TABLE workflow_intent_amendments (
  id                       text PRIMARY KEY,
  project_id               text NOT NULL REFERENCES projects(id),
  workflow_id              text NOT NULL,
  applied_against_version  integer NOT NULL,
  previous_expected_calls  integer,
  new_expected_calls       integer,
  previous_max_calls       integer,
  new_max_calls            integer,
  reason_provided          text,
  projected_cost           jsonb NOT NULL,
  amendment_signature_b64  text NOT NULL,
  signature_kid            text NOT NULL,
  created_at               timestamptz NOT NULL,
  FOREIGN KEY (project_id, workflow_id) REFERENCES workflow_intents (project_id, workflow_id),
  UNIQUE (project_id, workflow_id, applied_against_version)
);

-- Down Migration
DROP TABLE workflow_intent_amendments;
DROP TABLE workflow_intents;
DROP TABLE integrity_keys;
