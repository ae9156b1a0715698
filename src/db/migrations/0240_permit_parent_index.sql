-- Up Migration

-- Deleting a permit checks the self-reference `permits_parent_permit_id_fkey` (is any permit its
-- child?). Without an index on the referencing column that check reads every week partition of
-- permits, for each permit retention deletes. Few permits have a parent (revalidations, child
-- permits of sessions), so the index is partial and costs the ordinary call nothing.
CREATE INDEX permits_parent_idx ON permits (parent_permit_id) WHERE parent_permit_id IS NOT NULL;
