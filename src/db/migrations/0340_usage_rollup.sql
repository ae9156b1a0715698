-- Up Migration

-- The Spend page's usage (GET /v1/projects/{id}/usage) from a rollup of the settled permits
-- (docs/decisions/usage-rollup.md).
--
-- The chain sequencer folds the permit of each call record it chains, in the same transaction as
-- the call and governance rollups (`tollgate_fold_usage`, src/db/functions/): never the request
-- path. One row per (project, period of the permit's `settled_at`, provider, model, API key), per
-- hour and per UTC day: the usage report's own grouping. Reads take whole days and hours from
-- here and the rest (edges of a window, permits not folded yet, permits that never have a call
-- record, closeouts) from the permits (src/db/repositories/settled-usage.ts).

CREATE TABLE usage_rollup (
  project_id      text NOT NULL,
  -- The period's length in seconds and its start (periods aligned on the epoch, UTC).
  width           int NOT NULL CHECK (width IN (3600, 86400)),
  start           timestamptz NOT NULL,
  provider        text,
  model           text,
  key_id          text,
  requests        int NOT NULL,
  input_tokens    bigint NOT NULL,
  output_tokens   bigint NOT NULL,
  cost_usd_micros bigint NOT NULL
);
CREATE UNIQUE INDEX usage_rollup_key ON usage_rollup (project_id, width, start, provider, model, key_id) NULLS NOT DISTINCT;

-- Permits settled before the rollup existed are not folded: reads take a project's permits settled
-- before its start from the permits (a project created later has no row: all its folded permits are).
CREATE TABLE usage_rollup_starts (
  project_id text PRIMARY KEY,
  started_at timestamptz NOT NULL
);
INSERT INTO usage_rollup_starts (project_id, started_at) SELECT id, now() FROM projects;

-- Down Migration
DROP FUNCTION IF EXISTS tollgate_fold_usage(text[], text[]);
DROP TABLE usage_rollup_starts;
DROP TABLE usage_rollup;
