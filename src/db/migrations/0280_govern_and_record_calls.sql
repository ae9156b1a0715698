-- Up Migration

-- The pipeline's two batch statements take the names of the steps that run them (govern and
-- record); their current texts are src/db/functions/tollgate_govern_calls.sql and
-- tollgate_record_calls.sql, created after this step.
DROP FUNCTION IF EXISTS tollgate_begin_calls(int, jsonb);
DROP FUNCTION IF EXISTS tollgate_finish_calls(int, jsonb);
