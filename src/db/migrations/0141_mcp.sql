-- Up Migration

-- Managed MCP servers per project (issue 19). The credential is sealed with the secret box
-- (AES-256-GCM, src/crypto/secret-box.ts, purpose bound to the row); never returned.
CREATE TABLE mcp_servers (
  id                    text PRIMARY KEY,
  project_id            text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  server_ref            text NOT NULL,
  url                   text NOT NULL,
  description           text,
  credential_type       text CHECK (credential_type IN ('bearer', 'header')),
  credential_header     text,
  credential_encrypted  text,
  allowed_tools         text[] NOT NULL,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, server_ref)
);

-- One row per managed tool call: the idempotency claim, then the evidence (hashes, outcome, duration).
CREATE TABLE mcp_tool_calls (
  id                text PRIMARY KEY,
  project_id        text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  server_ref        text NOT NULL,
  tool_name         text NOT NULL,
  key_id            text NOT NULL,
  permit_id         text,
  session_id        text,
  workflow_id       text,
  idempotency_key   text,
  binding_sha256    text NOT NULL,
  stream            boolean NOT NULL DEFAULT false,
  status            text NOT NULL CHECK (status IN ('in_progress', 'completed')),
  outcome           text CHECK (outcome IN ('success', 'tool_error', 'protocol_error', 'denied')),
  arguments_sha256  text NOT NULL,
  result_sha256     text,
  error             jsonb,
  duration_ms       integer,
  http_status       integer,
  response          jsonb,
  started_at        timestamptz NOT NULL,
  finished_at       timestamptz
);
CREATE UNIQUE INDEX mcp_tool_calls_idempotency_idx ON mcp_tool_calls (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX mcp_tool_calls_permit_idx ON mcp_tool_calls (project_id, permit_id) WHERE permit_id IS NOT NULL;
CREATE INDEX mcp_tool_calls_session_idx ON mcp_tool_calls (project_id, session_id, started_at) WHERE session_id IS NOT NULL;

-- Down Migration
DROP TABLE IF EXISTS mcp_tool_calls;
DROP TABLE IF EXISTS mcp_servers;
