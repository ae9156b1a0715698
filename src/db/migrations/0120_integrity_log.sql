-- Up Migration

-- Issue 15: signed checkpoints over each project's event log, compliance exports.
-- No index is added to `events` (every index there costs every governed call): the log is read
-- through event_chain's (project_id, chain_pos) index and the tables below.

-- Signing keys of the compliance log (checkpoints and export manifests). The private key is sealed
-- with the secret box (src/crypto/secret-box.ts, AES-256-GCM, purpose bound as AAD). One active key
-- per purpose (valid_until IS NULL); a rotation closes the active key and inserts the next one.
CREATE TABLE compliance_signing_keys (
  kid                text PRIMARY KEY,            -- <note key name>+<key hash hex>, the signed-note key id
  purpose            text NOT NULL,
  algorithm          text NOT NULL CHECK (algorithm = 'Ed25519'),
  key_name           text NOT NULL,               -- the signed-note key name
  public_key         bytea NOT NULL,              -- raw 32 bytes
  private_key_sealed text NOT NULL,               -- secret box: PKCS#8 DER, base64
  valid_from         timestamptz NOT NULL DEFAULT now(),
  valid_until        timestamptz
);
CREATE UNIQUE INDEX compliance_signing_keys_active_idx ON compliance_signing_keys (purpose) WHERE valid_until IS NULL;

-- Perfect subtrees of each project's RFC 6962 tree (leaf i = the event at chain_pos i+1); level 0
-- are the leaf hashes. A node is written once, when complete, and never changes.
CREATE TABLE merkle_nodes (
  project_id text NOT NULL,
  level      smallint NOT NULL,
  idx        bigint NOT NULL,
  hash       bytea NOT NULL,
  PRIMARY KEY (project_id, level, idx)
);

-- Signed checkpoints (C2SP tlog-checkpoint notes), one per issued tree size.
CREATE TABLE log_checkpoints (
  project_id text NOT NULL,
  tree_size  bigint NOT NULL CHECK (tree_size > 0),
  root_hash  bytea NOT NULL,
  origin     text NOT NULL,
  kid        text NOT NULL REFERENCES compliance_signing_keys(kid),
  note       text NOT NULL,
  issued_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, tree_size)
);

CREATE TABLE compliance_exports (
  id               text PRIMARY KEY,
  project_id       text NOT NULL REFERENCES projects(id),
  status           text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  window_start     timestamptz NOT NULL,
  window_end       timestamptz NOT NULL,
  include          text[] NOT NULL,
  requested_by     text,
  progress         jsonb NOT NULL DEFAULT '{}'::jsonb,
  first_index      bigint,
  last_index       bigint,
  checkpoint_size  bigint,
  bundle_sha256    text,
  bundle_bytes     bigint,
  error            jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  started_at       timestamptz,
  completed_at     timestamptz
);
CREATE INDEX compliance_exports_project_idx ON compliance_exports (project_id, id DESC);

-- The bundle's files, written by the export workflow's activities (one row per file).
CREATE TABLE compliance_export_files (
  export_id  text NOT NULL REFERENCES compliance_exports(id) ON DELETE CASCADE,
  name       text NOT NULL,
  content    bytea NOT NULL,
  sha256     text NOT NULL,
  records    integer NOT NULL,
  PRIMARY KEY (export_id, name)
);

-- Down Migration
DROP TABLE compliance_export_files;
DROP TABLE compliance_exports;
DROP TABLE log_checkpoints;
DROP TABLE merkle_nodes;
DROP TABLE compliance_signing_keys;
