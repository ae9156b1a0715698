-- Up Migration

-- Retention with archives (docs/decisions/retention-and-archives.md). A project's own retention
-- in days (NULL: the gateway's RETENTION_DAYS; neither set keeps everything).
ALTER TABLE projects ADD COLUMN retention_days integer CHECK (retention_days IS NULL OR retention_days BETWEEN 1 AND 36500);

-- One row per sealed archive of a project's aged-out records: its window, the log range its
-- events.ndjson holds (leaf indexes first_index..last_index, all below the checkpoint it proves
-- against), the file and its hash. `head_hash` (the chain hash at the range's last position) and
-- `compact_range` (the Merkle compact range of the first last_index + 1 leaves, base64, largest
-- subtree first) are where verification of the retained log starts once the archived rows are gone.
-- status: building (file being written; nothing deleted), verified (read back and verified; rows
-- being deleted), completed (every aged-out row deleted).
CREATE TABLE archives (
  id               text PRIMARY KEY,
  project_id       text NOT NULL REFERENCES projects(id),
  status           text NOT NULL CHECK (status IN ('building', 'verified', 'completed')),
  window_since     timestamptz NOT NULL,
  window_until     timestamptz NOT NULL,
  first_index      bigint NOT NULL,
  last_index       bigint NOT NULL,
  last_seq         bigint NOT NULL,
  head_hash        text NOT NULL,
  compact_range    jsonb NOT NULL,
  checkpoint_size  bigint NOT NULL,
  path             text NOT NULL,
  sha256           text,
  bytes            bigint,
  deleted          jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  verified_at      timestamptz,
  completed_at     timestamptz
);
CREATE INDEX archives_project_until_idx ON archives (project_id, window_until);
-- At most one unfinished archive per project: a run resumes it rather than starting another.
CREATE UNIQUE INDEX archives_one_open_idx ON archives (project_id) WHERE status <> 'completed';

-- Down Migration
DROP TABLE archives;
ALTER TABLE projects DROP COLUMN retention_days;
