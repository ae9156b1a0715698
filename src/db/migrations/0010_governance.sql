-- Up Migration

-- Per-project governance policy: one current document per project plus every prior version.
CREATE TABLE project_policies (
  project_id  text PRIMARY KEY REFERENCES projects(id),
  version     integer NOT NULL,
  document    jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  updated_by  text
);

CREATE TABLE project_policy_versions (
  project_id  text NOT NULL REFERENCES projects(id),
  version     integer NOT NULL,
  document    jsonb NOT NULL,
  updated_at  timestamptz NOT NULL,
  updated_by  text,
  PRIMARY KEY (project_id, version)
);

-- The permit: anchor record of every governance decision.
CREATE TABLE permits (
  id                     text PRIMARY KEY,
  project_id             text NOT NULL REFERENCES projects(id),
  request_id             text,
  route                  text NOT NULL,
  operation              text,
  provider               text,
  model                  text,
  workflow_id            text,
  decision               text NOT NULL CHECK (decision IN ('allow', 'deny', 'review', 'throttle')),
  reason_code            text NOT NULL,
  display_reason         text NOT NULL,
  decision_details       jsonb NOT NULL,
  actions                jsonb NOT NULL DEFAULT '[]'::jsonb,
  estimated_input_tokens  integer NOT NULL DEFAULT 0,
  estimated_output_tokens integer NOT NULL DEFAULT 0,
  estimated_cost_micros  bigint,
  reservation_state      text NOT NULL DEFAULT 'none' CHECK (reservation_state IN ('none', 'active', 'settled', 'released', 'expired')),
  -- Period keys the reservation was booked against, e.g. [{"kind":"day","start":"2025-01-31"}, ...].
  reservation_periods    jsonb NOT NULL DEFAULT '[]'::jsonb,
  reserved_cost_micros   bigint NOT NULL DEFAULT 0,
  actual_cost_micros     bigint,
  actual_input_tokens    integer,
  actual_output_tokens   integer,
  settled_at             timestamptz,
  released_at            timestamptz,
  release_reason         text,
  issued_at              timestamptz NOT NULL,
  expires_at             timestamptz,
  revoked_at             timestamptz,
  revoked_by             text,
  revocation_reason      text,
  parent_permit_id       text REFERENCES permits(id),
  idempotency_key        text,
  metadata               jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX permits_project_issued_idx ON permits (project_id, issued_at DESC, id DESC);
CREATE INDEX permits_project_request_idx ON permits (project_id, request_id);
CREATE INDEX permits_project_workflow_idx ON permits (project_id, workflow_id) WHERE workflow_id IS NOT NULL;
CREATE INDEX permits_active_expiry_idx ON permits (expires_at) WHERE reservation_state = 'active';
CREATE UNIQUE INDEX permits_project_idempotency_idx ON permits (project_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Spend per project and UTC period (day, ISO week, month, quarter). reserved = active reservations,
-- settled = actual spend. `requests` counts allowed permits (the plan quota uses the month row).
CREATE TABLE spend_counters (
  project_id       text NOT NULL REFERENCES projects(id),
  period_kind      text NOT NULL CHECK (period_kind IN ('day', 'week', 'month', 'quarter')),
  period_start     date NOT NULL,
  reserved_micros  bigint NOT NULL DEFAULT 0,
  settled_micros   bigint NOT NULL DEFAULT 0,
  requests         bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, period_kind, period_start)
);

-- Fixed-window rate-limit counters shared by every process.
CREATE TABLE rate_limit_windows (
  project_id      text NOT NULL REFERENCES projects(id),
  limit_id        text NOT NULL,
  window_seconds  integer NOT NULL,
  window_start    timestamptz NOT NULL,
  used            bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, limit_id, window_seconds, window_start)
);

-- Append-only event log with a per-project hash chain.
CREATE TABLE events (
  seq         bigserial PRIMARY KEY,
  id          text NOT NULL UNIQUE,
  project_id  text NOT NULL REFERENCES projects(id),
  timestamp   timestamptz NOT NULL,
  event_type  text NOT NULL,
  source      text NOT NULL,
  phase       text NOT NULL,
  provider    text,
  model       text,
  permit_id   text,
  request_id  text,
  job_id      text,
  session_id  text,
  metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
  prev_hash   text NOT NULL,
  hash        text NOT NULL
);
CREATE INDEX events_project_seq_idx ON events (project_id, seq);
CREATE INDEX events_project_request_idx ON events (project_id, request_id, seq) WHERE request_id IS NOT NULL;
CREATE INDEX events_project_permit_idx ON events (project_id, permit_id, seq) WHERE permit_id IS NOT NULL;

-- Down Migration
DROP TABLE events;
DROP TABLE rate_limit_windows;
DROP TABLE spend_counters;
DROP TABLE permits;
DROP TABLE project_policy_versions;
DROP TABLE project_policies;
