-- Up Migration

-- Deleting a permit (retention, a week partition's dependents) checks every foreign key that names
-- it: is any evidence or attestation still pointing at it? The check looks the permit's id up in
-- the referencing column alone, and without an index leading with that column it read the whole
-- referencing table for each permit deleted (permit_evidence's own index leads with project_id).
-- Neither table is written by a governed call, so the indexes cost the request path nothing.
-- permit_attestations.permit_id (unique), permit_usage_reports.permit_id (its key) and
-- permits.parent_permit_id (migration 0240) are indexed already.
CREATE INDEX permit_evidence_permit_id_idx ON permit_evidence (permit_id);
CREATE INDEX permit_attestations_child_permit_idx ON permit_attestations (child_permit_id);

-- Down Migration
DROP INDEX permit_attestations_child_permit_idx;
DROP INDEX permit_evidence_permit_id_idx;
