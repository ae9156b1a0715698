-- Up Migration

-- The Governance page's counts from a rollup of the permits (docs/decisions/governance-rollup.md).
--
-- The chain sequencer folds the permit of each call record it chains, in the same transaction as
-- the call rollup (`tollgate_fold_governance`, src/db/functions/): never the request path. One row
-- per (project, period, grouping): per minute and per hour of the permit's `issued_at`, decisions
-- by (decision, reason code) and firewall actions by (action, category). Reads take whole periods
-- from here and the rest (sub-minute edges of a window, permits not folded yet, permits that never
-- have a call record) from the permits themselves (src/db/repositories/governance-metrics.ts).

CREATE TABLE governance_rollup (
  project_id  text NOT NULL,
  -- The period's length in seconds and its start (periods aligned on the epoch, UTC).
  width       int NOT NULL CHECK (width IN (60, 3600)),
  start       timestamptz NOT NULL,
  -- A decision row names (decision, reason_code), a firewall row (action, category); the others are NULL.
  dimension   text NOT NULL CHECK (dimension IN ('decision', 'firewall')),
  decision    text,
  reason_code text,
  action      text,
  category    text,
  permits     int NOT NULL
);
CREATE UNIQUE INDEX governance_rollup_key ON governance_rollup (project_id, width, dimension, start, decision, reason_code, action, category) NULLS NOT DISTINCT;

-- Permits issued before the rollup existed are not folded: reads take a project's permits before
-- its start from the permits (a project created later has no row: all its folded permits are).
CREATE TABLE governance_rollup_starts (
  project_id text PRIMARY KEY,
  started_at timestamptz NOT NULL
);
INSERT INTO governance_rollup_starts (project_id, started_at) SELECT id, now() FROM projects;

-- The permits the fold never sees, read from the permits by this index: those of other surfaces
-- than the governed-call routes (action permits, sessions, MCP tools) and attested children. The
-- predicate is the complement of the fold's (src/db/repositories/governance-rollup.ts): a governed
-- call's permit writes no entry here.
CREATE INDEX permits_unfolded_issued_idx ON permits (project_id, issued_at)
  WHERE (route NOT IN ('executions', 'execute') AND route NOT LIKE 'proxy:%') OR parent_permit_id IS NOT NULL;

-- The Calls page lists the permits awaiting review (`GET /v1/permits?decision=review`): without an
-- index of its own that walked every permit of the project when none or few are in review. Only a
-- review decision writes an entry.
CREATE INDEX permits_project_review_idx ON permits (project_id, issued_at DESC, id DESC) WHERE decision = 'review';

-- Down Migration
DROP INDEX permits_project_review_idx;
DROP FUNCTION IF EXISTS tollgate_fold_governance(text[], text[]);
DROP INDEX permits_unfolded_issued_idx;
DROP TABLE governance_rollup_starts;
DROP TABLE governance_rollup;
