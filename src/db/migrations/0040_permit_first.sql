-- Up Migration

-- Permit-first API (issue 7): idempotency head lookup, usage closeouts, attestations, evidence,
-- and the metadata of addressable policies (their configuration lives in the policy document).

-- Revalidated permits carry the caller's idempotency key in metadata (the column is unique and
-- stays on the first permit of the key); the newest permit of a key is the one a replay answers with.
CREATE INDEX IF NOT EXISTS permits_project_meta_idempotency_idx
  ON permits (project_id, (metadata->>'idempotency_key'))
  WHERE metadata ? 'idempotency_key';

-- One usage closeout per permit (POST /v1/permits/{id}/usage).
CREATE TABLE IF NOT EXISTS permit_usage_reports (
  permit_id               text PRIMARY KEY REFERENCES permits(id),
  project_id              text NOT NULL REFERENCES projects(id),
  usage_idempotency_key   text NOT NULL,
  request_hash            text NOT NULL,
  status                  text NOT NULL CHECK (status IN ('completed', 'failed')),
  input_tokens            integer NOT NULL DEFAULT 0,
  output_tokens           integer NOT NULL DEFAULT 0,
  billed_cost_micros      bigint NOT NULL DEFAULT 0,
  verification            jsonb,
  error                   jsonb,
  occurred_at             timestamptz,
  reported_at             timestamptz NOT NULL,
  reported_by             text NOT NULL,
  response                jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS permit_usage_reports_project_idx ON permit_usage_reports (project_id, reported_at);

-- Human sign-off of a review permit; the allow it produced is child_permit_id.
CREATE TABLE IF NOT EXISTS permit_attestations (
  id               text PRIMARY KEY,
  project_id       text NOT NULL REFERENCES projects(id),
  permit_id        text NOT NULL UNIQUE REFERENCES permits(id),
  child_permit_id  text NOT NULL REFERENCES permits(id),
  attested_by      text NOT NULL,
  attested_at      timestamptz NOT NULL,
  reason           text NOT NULL,
  recorded_at      timestamptz NOT NULL,
  recorded_by      text NOT NULL
);

CREATE TABLE IF NOT EXISTS permit_evidence (
  id              text PRIMARY KEY,
  project_id      text NOT NULL REFERENCES projects(id),
  permit_id       text NOT NULL REFERENCES permits(id),
  type            text NOT NULL,
  description     text,
  uri             text,
  content_sha256  text,
  data            jsonb,
  submitted_by    text NOT NULL,
  created_at      timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS permit_evidence_permit_idx ON permit_evidence (project_id, permit_id, created_at);

-- Addressable policies (GET/POST /v1/policies): name, description and provenance of each rule;
-- the rule's configuration itself is in project_policies.document, where evaluation reads it.
CREATE TABLE IF NOT EXISTS project_policy_rules (
  project_id        text NOT NULL REFERENCES projects(id),
  policy_id         text NOT NULL,
  type              text NOT NULL,
  name              text,
  description       text,
  template_id       text,
  created_at        timestamptz NOT NULL,
  created_by        text NOT NULL,
  updated_at        timestamptz NOT NULL,
  updated_by        text NOT NULL,
  document_version  integer NOT NULL,
  PRIMARY KEY (project_id, policy_id)
);

-- Down Migration
DROP TABLE IF EXISTS project_policy_rules;
DROP TABLE IF EXISTS permit_evidence;
DROP TABLE IF EXISTS permit_attestations;
DROP TABLE IF EXISTS permit_usage_reports;
DROP INDEX IF EXISTS permits_project_meta_idempotency_idx;
