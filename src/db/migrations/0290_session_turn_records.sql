-- Up Migration

-- A realtime session's turn leaves a call record like every other governed call
-- (docs/decisions/call-record.md): route `sessions`, and the session it belongs to.
--
-- The column is added on the partitioned parent, which adds it to every week partition; nullable
-- without a default, so no row is rewritten, and a record of any other surface stores nothing for it.
ALTER TABLE executions ADD COLUMN session_id text;

-- The route check admits `sessions`. Migration 0200 created it as `executions_route_check1` (the
-- table it replaced held the plain name then). NOT VALID: the stored rows passed the narrower
-- check this one replaces, so there is nothing to scan (and no lock held over all partitions while
-- scanning); every row written from now on is checked.
ALTER TABLE executions
  DROP CONSTRAINT IF EXISTS executions_route_check1,
  DROP CONSTRAINT IF EXISTS executions_route_check,
  ADD CONSTRAINT executions_route_check CHECK (route IN ('executions', 'execute', 'proxy', 'sessions')) NOT VALID;

-- GET /v1/calls?session_id=: a session's turns are a sliver of a project's calls, which the
-- project's created_at index would walk past one by one. Partial, as the workflow and job filters'
-- indexes are: a call without a session adds no entry (0 bytes), a session turn's record one entry.
CREATE INDEX executions_project_session_idx ON executions (project_id, session_id, created_at DESC) WHERE session_id IS NOT NULL;
