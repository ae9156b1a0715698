-- Up Migration

-- Where an export file's bytes are (docs/decisions/archive-store.md): `database` in its
-- compliance_export_chunks rows (every file written before the archive store), `archive_store`
-- one object in the archive store (ARCHIVE_DIR or the ARCHIVE_S3_ bucket) under
-- exports/<export id>/<file name>. Every writer names it: no default.
ALTER TABLE compliance_export_files
  ADD COLUMN stored_in text NOT NULL DEFAULT 'database' CHECK (stored_in IN ('database', 'archive_store'));
ALTER TABLE compliance_export_files ALTER COLUMN stored_in DROP DEFAULT;

-- Down Migration
ALTER TABLE compliance_export_files DROP COLUMN stored_in;
