-- Up Migration

-- The hash chain moves out of the events table (docs/decisions/event-hash-chain.md).
-- Chaining used to UPDATE each event in place (chain_pos, prev_hash, hash); chain_pos was indexed,
-- so every event was written twice with all six of its indexes: about 100 index entries per
-- governed call, most of the pipeline's PostgreSQL work. Now an event row is written once and never
-- touched: the request path also inserts its seq into `event_chain_pending` (a two-column queue), and
-- the sequencer moves pending events into `event_chain`, insert-only.

CREATE TABLE event_chain (
  seq        bigint PRIMARY KEY,       -- the chained event (events.seq)
  project_id text NOT NULL,
  chain_pos  bigint NOT NULL,          -- 1, 2, 3, ... per project: the chain's order
  prev_hash  text NOT NULL,
  hash       text NOT NULL             -- sha256(prev_hash + canonical(event)), src/db/repositories/events.ts
);
CREATE UNIQUE INDEX event_chain_project_pos_idx ON event_chain (project_id, chain_pos);

-- Events inserted and not chained yet: one row per insert statement (a governed call's statement
-- inserts several events), holding their seqs. Rows commit with their events, so events that
-- commit late (lower seqs after higher ones were chained) still wait here and are chained next round.
CREATE TABLE event_chain_pending (
  project_id text NOT NULL,
  first_seq  bigint NOT NULL,
  seqs       bigint[] NOT NULL,
  PRIMARY KEY (project_id, first_seq)
);

INSERT INTO event_chain (seq, project_id, chain_pos, prev_hash, hash)
SELECT seq, project_id, chain_pos, prev_hash, hash FROM events WHERE chain_pos IS NOT NULL;
INSERT INTO event_chain_pending (project_id, first_seq, seqs)
SELECT project_id, min(seq), array_agg(seq ORDER BY seq) FROM events WHERE chain_pos IS NULL GROUP BY project_id;

DROP INDEX events_unchained_idx;
DROP INDEX events_project_chain_idx;
ALTER TABLE events DROP COLUMN chain_pos, DROP COLUMN prev_hash, DROP COLUMN hash;

-- Events as readers see them: the chain columns are NULL until the sequencer reaches the event.
CREATE VIEW events_chained AS
SELECT e.*, c.chain_pos, c.prev_hash, c.hash
  FROM events e LEFT JOIN event_chain c ON c.seq = e.seq;

-- Inserts one project's events, unchained, in array order (seq drawn in that order), and queues
-- them for the sequencer. No lock.
CREATE OR REPLACE FUNCTION tollgate_insert_events(p_project text, p_events jsonb)
RETURNS void LANGUAGE sql AS $$
  WITH inserted AS (
    INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                        job_id, session_id, metadata)
    SELECT e->>'id', p_project, (e->>'timestamp')::timestamptz, e->>'event_type', e->>'source', e->>'phase',
           e->>'provider', e->>'model', e->>'permit_id', e->>'request_id', e->>'job_id', e->>'session_id',
           coalesce(e->'metadata', '{}'::jsonb)
      FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, ord)
     ORDER BY ord
    RETURNING seq
  )
  INSERT INTO event_chain_pending (project_id, first_seq, seqs)
  SELECT p_project, min(seq), array_agg(seq ORDER BY seq) FROM inserted HAVING count(*) > 0;
$$;

-- Down Migration
CREATE OR REPLACE FUNCTION tollgate_insert_events(p_project text, p_events jsonb)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO events (id, project_id, timestamp, event_type, source, phase, provider, model, permit_id, request_id,
                      job_id, session_id, metadata)
  SELECT e->>'id', p_project, (e->>'timestamp')::timestamptz, e->>'event_type', e->>'source', e->>'phase',
         e->>'provider', e->>'model', e->>'permit_id', e->>'request_id', e->>'job_id', e->>'session_id',
         coalesce(e->'metadata', '{}'::jsonb)
    FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, ord)
   ORDER BY ord;
$$;
DROP VIEW events_chained;
ALTER TABLE events ADD COLUMN chain_pos bigint, ADD COLUMN prev_hash text, ADD COLUMN hash text;
UPDATE events e SET chain_pos = c.chain_pos, prev_hash = c.prev_hash, hash = c.hash FROM event_chain c WHERE c.seq = e.seq;
CREATE UNIQUE INDEX events_project_chain_idx ON events (project_id, chain_pos) WHERE chain_pos IS NOT NULL;
CREATE INDEX events_unchained_idx ON events (project_id, seq) WHERE chain_pos IS NULL;
DROP TABLE event_chain_pending;
DROP TABLE event_chain;
