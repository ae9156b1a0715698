-- Up Migration

-- Dashboard users (issue 16). Created by operators with the CLI; the password is stored as an
-- Argon2id PHC string. `email_normalized` (lower-cased, trimmed) is what logins match on.
CREATE TABLE users (
  id                text PRIMARY KEY,
  email             text NOT NULL,
  email_normalized  text NOT NULL UNIQUE,
  password_hash     text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  disabled_at       timestamptz
);

CREATE TABLE project_members (
  project_id  text NOT NULL REFERENCES projects(id),
  user_id     text NOT NULL REFERENCES users(id),
  role        text NOT NULL CHECK (role IN ('owner', 'admin', 'viewer')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user_idx ON project_members (user_id, project_id);

-- One login = one session (the refresh-token family). Logout or reuse of a spent refresh token
-- revokes the session; access tokens name it (`sid`) and die with it.
CREATE TABLE auth_sessions (
  id             text PRIMARY KEY,
  user_id        text NOT NULL REFERENCES users(id),
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL,
  revoked_at     timestamptz,
  revoke_reason  text
);
CREATE INDEX auth_sessions_user_idx ON auth_sessions (user_id);

-- Opaque refresh tokens, stored as SHA-256 only; each is spent once (`used_at`) and replaced.
CREATE TABLE refresh_tokens (
  id          text PRIMARY KEY,
  session_id  text NOT NULL REFERENCES auth_sessions(id),
  token_hash  bytea NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz
);
CREATE INDEX refresh_tokens_session_idx ON refresh_tokens (session_id);

-- Failed logins, for rate limiting by e-mail and by client address (rows older than a day are purged).
CREATE TABLE auth_login_failures (
  id          bigserial PRIMARY KEY,
  email_normalized text NOT NULL,
  client_ip   text NOT NULL,
  failed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_login_failures_email_idx ON auth_login_failures (email_normalized, failed_at);
CREATE INDEX auth_login_failures_ip_idx ON auth_login_failures (client_ip, failed_at);

-- API keys gain an optional expiry and who created them.
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz, ADD COLUMN created_by text;

-- Down Migration
ALTER TABLE api_keys DROP COLUMN created_by, DROP COLUMN expires_at;
DROP TABLE auth_login_failures;
DROP TABLE refresh_tokens;
DROP TABLE auth_sessions;
DROP TABLE project_members;
DROP TABLE users;
