-- Up Migration

-- Retention deletes a project's idempotency keys created before its cutoff
-- (src/retention/delete.ts). The primary key leads with the project but not the time, so each
-- batch read every key the project holds; this index reads only the keys before the cutoff. It
-- is written only for calls that carry an Idempotency-Key.
CREATE INDEX idempotency_keys_project_created_idx ON idempotency_keys (project_id, created_at);

-- Down Migration
DROP INDEX idempotency_keys_project_created_idx;
