-- Up Migration

-- Functions no code calls any more: the per-call statements the batched pipeline replaced
-- (tollgate_begin_call and tollgate_finish_call by tollgate_begin_calls and tollgate_finish_calls,
-- migrations 0102–0114), the older ones before them (tollgate_reserve_allow, 0090;
-- tollgate_record_execution, 0091) and the event inserts only those called
-- (tollgate_append_events, tollgate_insert_events; events go in through
-- tollgate_insert_batch_events, 0107). Left in place, each read as a live path of the request.
DROP FUNCTION IF EXISTS tollgate_begin_call(integer, text, text, integer, jsonb, jsonb, bigint, bigint, jsonb, jsonb, jsonb);
DROP FUNCTION IF EXISTS tollgate_finish_call(integer, jsonb, jsonb, jsonb, text, jsonb, bytea);
DROP FUNCTION IF EXISTS tollgate_reserve_allow(integer, text, text, integer, jsonb, jsonb, bigint, bigint, jsonb, jsonb);
DROP FUNCTION IF EXISTS tollgate_record_execution(jsonb, jsonb);
DROP FUNCTION IF EXISTS tollgate_append_events(text, jsonb);
DROP FUNCTION IF EXISTS tollgate_insert_events(text, jsonb);

-- Down Migration

-- Nothing to restore: no version of the code since migration 0114 calls these functions.
