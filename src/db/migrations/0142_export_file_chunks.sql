-- Up Migration

-- An export's files in chunks (about one batch of events each, a few hundred kB), written as the
-- export is built and read back one at a time when the bundle is hashed or downloaded. A whole
-- file in one row made the build hold every file in memory until its end and send it as one
-- multi-megabyte parameter, which held the API process's event loop for 10–30 ms
-- (docs/decisions/compliance-exports.md); a bytea cannot exceed 1 GB either.
CREATE TABLE compliance_export_chunks (
  export_id text NOT NULL REFERENCES compliance_exports(id) ON DELETE CASCADE,
  name      text NOT NULL,
  chunk     integer NOT NULL CHECK (chunk >= 0),
  content   bytea NOT NULL,
  PRIMARY KEY (export_id, name, chunk)
);

ALTER TABLE compliance_export_files ADD COLUMN bytes bigint, ADD COLUMN chunks integer;
INSERT INTO compliance_export_chunks (export_id, name, chunk, content)
  SELECT export_id, name, 0, content FROM compliance_export_files;
UPDATE compliance_export_files SET bytes = octet_length(content), chunks = 1;
ALTER TABLE compliance_export_files
  ALTER COLUMN bytes SET NOT NULL,
  ALTER COLUMN chunks SET NOT NULL,
  DROP COLUMN content;

-- Down Migration
ALTER TABLE compliance_export_files ADD COLUMN content bytea;
UPDATE compliance_export_files f
   SET content = coalesce((SELECT string_agg(c.content, ''::bytea ORDER BY c.chunk)
                             FROM compliance_export_chunks c
                            WHERE c.export_id = f.export_id AND c.name = f.name AND c.chunk < f.chunks), ''::bytea);
ALTER TABLE compliance_export_files ALTER COLUMN content SET NOT NULL, DROP COLUMN bytes, DROP COLUMN chunks;
DROP TABLE compliance_export_chunks;
