-- Up Migration

-- Webhook subscriptions. The signing secret (whsec_…) is stored encrypted (AES-256-GCM,
-- src/crypto/secret-box.ts); it is shown once, at creation.
CREATE TABLE webhook_subscriptions (
  id                text PRIMARY KEY,
  project_id        text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  url               text NOT NULL,
  description       text,
  event_types       text[] NOT NULL,
  enabled           boolean NOT NULL DEFAULT true,
  secret_encrypted  text NOT NULL,
  disabled_reason   text,
  deleted_at        timestamptz,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_subscriptions_project_idx ON webhook_subscriptions (project_id, id) WHERE deleted_at IS NULL;

-- One message per (subscription, source event): its webhook-id and payload are fixed here, so
-- every retry sends the same id and the same body. The unique pair makes the fan-out idempotent.
CREATE TABLE webhook_messages (
  id               text PRIMARY KEY,
  project_id       text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  subscription_id  text NOT NULL REFERENCES webhook_subscriptions(id) ON DELETE CASCADE,
  event_id         text NOT NULL,
  event_type       text NOT NULL,
  request_id       text,
  job_id           text,
  permit_id        text,
  payload          jsonb NOT NULL,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'cancelled')),
  attempts         int NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT now(),
  completed_at     timestamptz,
  UNIQUE (subscription_id, event_id)
);
CREATE INDEX webhook_messages_subscription_idx ON webhook_messages (subscription_id, id DESC);

-- One row per delivery attempt (what GET /v1/webhooks/{id}/deliveries lists).
CREATE TABLE webhook_attempts (
  id               text PRIMARY KEY,
  message_id       text NOT NULL REFERENCES webhook_messages(id) ON DELETE CASCADE,
  subscription_id  text NOT NULL,
  project_id       text NOT NULL,
  attempt          int NOT NULL,
  attempted_at     timestamptz NOT NULL,
  status_code      int,
  latency_ms       int NOT NULL,
  ok               boolean NOT NULL,
  error            text,
  response_body    text,
  UNIQUE (message_id, attempt)
);
CREATE INDEX webhook_attempts_subscription_idx ON webhook_attempts (subscription_id, attempted_at DESC, id DESC);

-- The fan-out's position in each project's event chain (events.chain_pos, monotonic per project
-- in commit order, unlike seq).
CREATE TABLE webhook_cursors (
  project_id  text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  chain_pos   bigint NOT NULL
);

-- Without TOLLGATE_MASTER_KEY (development and tests only) the secret box's key is generated once
-- and kept here; production refuses to encrypt without the master key.
CREATE TABLE local_secret_keys (
  purpose     text PRIMARY KEY,
  key         bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE local_secret_keys;
DROP TABLE webhook_cursors;
DROP TABLE webhook_attempts;
DROP TABLE webhook_messages;
DROP TABLE webhook_subscriptions;
