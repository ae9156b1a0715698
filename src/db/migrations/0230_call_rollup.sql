-- Up Migration

-- The Overview's aggregates from a rollup of the call record (docs/decisions/call-rollup.md).
--
-- The chain sequencer folds each call record into `call_rollup` in the transaction that chains it
-- (`tollgate_fold_calls`, src/db/functions/): never the request path. One row per (project, period,
-- dimension, group): per minute and per hour, by status (with a latency histogram), by provider
-- and model, and by key. Reads take whole periods from here and the rest (sub-minute edges of a
-- window, records not chained yet) from the records themselves (src/db/repositories/call-metrics.ts).

CREATE TABLE call_rollup (
  project_id      text NOT NULL,
  -- The period's length in seconds and its start (periods aligned on the epoch, UTC).
  width           int NOT NULL CHECK (width IN (60, 3600)),
  start           timestamptz NOT NULL,
  -- Which grouping the row is: by status, by (provider, model), or by key; the other columns are NULL.
  dimension       text NOT NULL CHECK (dimension IN ('status', 'model', 'key')),
  status          text,
  provider        text,
  model           text,
  key_id          text,
  calls           int NOT NULL,
  failed          int NOT NULL,
  denied          int NOT NULL,
  input_tokens    bigint NOT NULL,
  output_tokens   bigint NOT NULL,
  cost_usd_micros bigint NOT NULL,
  -- Status rows of completed and failed calls: how many calls took how long, element i counting the
  -- durations in bucket i of the log-scale bounds the fold is given (src/db/latency-histogram.ts);
  -- the array's subscripts run from its first non-empty bucket to its last.
  latency         int[]
);
CREATE UNIQUE INDEX call_rollup_key ON call_rollup (project_id, width, dimension, start, status, provider, model, key_id) NULLS NOT DISTINCT;

-- Records created before the rollup existed are not folded: reads take a project's calls before its
-- start from the records (a project created later has no row: all its records are folded).
CREATE TABLE call_rollup_starts (
  project_id text PRIMARY KEY,
  started_at timestamptz NOT NULL
);
INSERT INTO call_rollup_starts (project_id, started_at) SELECT id, now() FROM projects;

-- Down Migration
DROP FUNCTION IF EXISTS tollgate_fold_calls(text[], text[], int[]);
DROP TABLE call_rollup_starts;
DROP TABLE call_rollup;
