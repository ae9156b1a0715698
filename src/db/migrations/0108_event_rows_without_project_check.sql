-- Up Migration
-- A governed call writes about eight event rows and one in-flight marker, and PostgreSQL checked
-- each row's project against `projects` with a foreign-key trigger (one more query per row): 7-8% of
-- PostgreSQL's CPU at c=32 (perf, `C=32 npm run bench:pipeline-db`; 2% without these two). The
-- rows are written only by the gateway, for a project it has just authenticated, and projects are
-- never deleted, so the check could not fail. The anchor records (permits, executions) and the
-- counters keep theirs. docs/decisions/statement-batching.md.
ALTER TABLE events DROP CONSTRAINT events_project_id_fkey;
ALTER TABLE inflight_calls DROP CONSTRAINT inflight_calls_project_id_fkey;

-- Down Migration
ALTER TABLE events ADD CONSTRAINT events_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
ALTER TABLE inflight_calls ADD CONSTRAINT inflight_calls_project_id_fkey FOREIGN KEY (project_id) REFERENCES projects(id);
