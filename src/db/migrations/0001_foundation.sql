-- Up Migration
CREATE TABLE projects (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  plan        text NOT NULL DEFAULT 'starter' CHECK (plan IN ('starter', 'production', 'enterprise')),
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Keys are shown once at creation; only their SHA-256 is stored. The prefix identifies a key in
-- listings without revealing it.
CREATE TABLE api_keys (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects(id),
  name        text,
  scope       text NOT NULL CHECK (scope IN ('client', 'admin')),
  key_prefix  text NOT NULL,
  key_hash    bytea NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);

-- One store for every route that honours an idempotency key. `scope` names the route family
-- (executions, execute, proxy:openai, permits, ...); `request_hash` binds the key to the payload.
CREATE TABLE idempotency_keys (
  project_id        text NOT NULL REFERENCES projects(id),
  scope             text NOT NULL,
  key               text NOT NULL,
  request_hash      text NOT NULL,
  state             text NOT NULL CHECK (state IN ('in_flight', 'completed')),
  resource_id       text,
  response_status   integer,
  response_headers  jsonb,
  response_body     bytea,
  created_at        timestamptz NOT NULL DEFAULT now(),
  completed_at      timestamptz,
  expires_at        timestamptz NOT NULL,
  PRIMARY KEY (project_id, scope, key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- Down Migration
DROP TABLE idempotency_keys;
DROP TABLE api_keys;
DROP TABLE projects;
