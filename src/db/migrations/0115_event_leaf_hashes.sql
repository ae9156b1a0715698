-- Up Migration

-- Each chained event's Merkle leaf hash, RFC 6962's sha256(0x00 || canonical form), written by the
-- sequencer, which holds the canonical form while it chains the event. The checkpoint builds the
-- tree from these instead of writing every event out and hashing it again (~20–30 µs per event on
-- the API process's event loop: docs/decisions/checkpoints-sign-what-was-chained.md). NULL on rows chained before
-- this migration: the checkpoint writes those out from the event as before.
ALTER TABLE event_chain ADD COLUMN leaf_hash bytea;

-- Down Migration

ALTER TABLE event_chain DROP COLUMN leaf_hash;
