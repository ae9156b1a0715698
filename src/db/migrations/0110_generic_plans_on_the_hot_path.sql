-- Up Migration
-- PL/pgSQL caches each statement's plan, but under plan_cache_mode = auto a statement with
-- parameters is planned again on every execution for as long as its custom plans look cheaper than
-- the generic one, and the batch statements' do when a batch holds one call (`= ANY('{1}')`, one
-- element of p_calls): at one call in flight, planning was 35 % of PostgreSQL's CPU (perf, `C=1 npm
-- run bench:pipeline-db`: GetCachedPlan 19.9 %, standard_planner 14.9 %). Their statements are key
-- lookups and inserts whose best plan does not depend on the values, so they keep one generic plan
-- per session: PostgreSQL CPU per call 5.2 → 3.8 ms, govern p50 4.3 → 3.3 ms, record p50 3.5 → 2.4
-- ms (docs/performance.md). The setting holds inside the functions they call
-- (tollgate_insert_batch_events, tollgate_rate_used) and is restored when they return.
ALTER FUNCTION tollgate_begin_calls(int, jsonb) SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION tollgate_finish_calls(int, jsonb) SET plan_cache_mode = force_generic_plan;

-- Down Migration
ALTER FUNCTION tollgate_begin_calls(int, jsonb) RESET plan_cache_mode;
ALTER FUNCTION tollgate_finish_calls(int, jsonb) RESET plan_cache_mode;
