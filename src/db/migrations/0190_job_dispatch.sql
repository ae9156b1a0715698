-- Up Migration

-- When and how a job's governed call was dispatched (docs/decisions/jobs.md): `start`, the first
-- dispatch's start (routing, start details, instant), and `attempts`, each dispatch attempt's start
-- and the provider tries before it, keyed by attempt number. Written when an attempt starts, before
-- the provider is called, so whatever records the call (the attempt itself, or the workflow after
-- the attempt was lost or cancelled) knows it was sent: the record's lifecycle is built from it
-- and the call's dispatch events are derived, not stored. A job keeps no in-flight mark on its
-- permit: Temporal's activity timeouts detect its crashes.
ALTER TABLE jobs ADD COLUMN dispatch jsonb;

-- Down Migration
ALTER TABLE jobs DROP COLUMN dispatch;
