-- Up Migration
-- Payment-provider webhook events already processed (idempotency on the event id: a redelivery is
-- acknowledged and not applied again).
CREATE TABLE billing_events (
  provider     text NOT NULL,
  event_id     text NOT NULL,
  type         text NOT NULL,
  project_id   text,
  applied_plan text,
  received_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, event_id)
);

-- Down Migration
DROP TABLE billing_events;
