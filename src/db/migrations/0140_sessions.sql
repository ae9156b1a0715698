-- Up Migration

-- Realtime governance sessions (issue 19). The sessionWorkflow owns the live counters; this row
-- is the durable record (written at start, periodically and at close) and what reads fall back to.
CREATE TABLE sessions (
  id                    text PRIMARY KEY,
  project_id            text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  status                text NOT NULL CHECK (status IN ('active', 'ended', 'expired', 'failed')),
  provider              text NOT NULL,
  model                 text NOT NULL,
  modality              text NOT NULL DEFAULT 'text',
  workflow_id           text,
  max_turns             integer,
  max_cost_usd_micros   bigint,
  max_duration_seconds  integer,
  idle_timeout_seconds  integer NOT NULL,
  turns                 integer NOT NULL DEFAULT 0,
  spent_usd_micros      bigint NOT NULL DEFAULT 0,
  metadata              jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_by_key        text NOT NULL,
  idempotency_key       text,
  end_reason            text,
  error                 jsonb,
  started_at            timestamptz NOT NULL,
  expires_at            timestamptz,
  ended_at              timestamptz,
  temporal_workflow_id  text NOT NULL
);
CREATE INDEX sessions_project_idx ON sessions (project_id, started_at DESC);
CREATE UNIQUE INDEX sessions_idempotency_idx ON sessions (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- One row per turn decision (text turns, voice transcripts, response.done) and per action permit.
CREATE TABLE session_turns (
  id                     text PRIMARY KEY,
  project_id             text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  session_id             text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  kind                   text NOT NULL CHECK (kind IN ('turn', 'action')),
  client_turn_id         text,
  turn_number            integer,
  role                   text,
  tool_name              text,
  arguments_sha256       text,
  decision               text NOT NULL,
  reason_code            text NOT NULL,
  display_reason         text NOT NULL,
  permit_id              text,
  estimated_cost_micros  bigint NOT NULL DEFAULT 0,
  usage                  jsonb,
  cost_usd_micros        bigint,
  settled_at             timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_turns_session_idx ON session_turns (session_id, created_at);
CREATE UNIQUE INDEX session_turns_client_idx ON session_turns (session_id, kind, client_turn_id) WHERE client_turn_id IS NOT NULL;

-- Search results attached to a session (query, result URLs and content hashes; never the content).
CREATE TABLE session_search_evidence (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  session_id  text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  query       text NOT NULL,
  provider    text,
  results     jsonb NOT NULL,
  turn_id     text,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_search_evidence_session_idx ON session_search_evidence (session_id, created_at);

-- The session's SSE and timeline read its events by session id.
CREATE INDEX events_session_idx ON events (project_id, session_id, seq) WHERE session_id IS NOT NULL;

-- Down Migration
DROP INDEX IF EXISTS events_session_idx;
DROP TABLE IF EXISTS session_search_evidence;
DROP TABLE IF EXISTS session_turns;
DROP TABLE IF EXISTS sessions;
