/**
 * The call rollup (migration 0230, docs/decisions/call-rollup.md): call records folded per minute
 * and per hour by status, by (provider, model) and by key, with a latency histogram, so the
 * Overview's aggregates read a few rows per period instead of every call in a window.
 *
 * Folded off the request path: the chain sequencer folds the records it chains in the same
 * transaction (src/db/repositories/event-chain.ts), a record with a lifecycle when its leaf is chained,
 * any other record (a denial, a call recorded with its events) when its terminal event is. So a
 * record is in the rollup exactly when its leaf or terminal event left `event_chain_pending`, and
 * `UNFOLDED_RECORDS_SQL` finds the others.
 */
import type { Queryable } from '../pool';
import { EXECUTION_EVENT_SOURCE } from '../../executions/lifecycle-events';
import { LATENCY_BOUNDS } from '../latency-histogram';
import { rollupBounds } from './rollup-bounds';

/** The events that end a record without a lifecycle (src/executions/record.ts writes one per such record). */
export const TERMINAL_EVENT_TYPES: readonly string[] = ['request.completed', 'request.errored', 'request.denied'];

/** Whether a chained event is a record's terminal event: its request_id is then the record's id. */
export function isTerminalEvent(e: { event_type: string; source: string; request_id: string | null }): boolean {
  return e.request_id !== null && e.source === EXECUTION_EVENT_SOURCE && TERMINAL_EVENT_TYPES.includes(e.event_type);
}

/**
 * Adds the records (project, id) to the rollup, one upsert per group, and their permits to the
 * governance rollup (src/db/repositories/governance-rollup.ts) and the usage rollup
 * (src/db/repositories/usage-rollup.ts), in one statement; each record must be folded once.
 */
export async function foldCalls(db: Queryable, projectIds: readonly string[], ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.query(
    'SELECT tollgate_fold_calls($1::text[], $2::text[], $3::int[]), tollgate_fold_governance($1::text[], $2::text[]), tollgate_fold_usage($1::text[], $2::text[])',
    [projectIds, ids, LATENCY_BOUNDS],
  );
}

/**
 * The ids of the project's records not folded yet (`$1` the project): those whose leaf or terminal
 * event still waits in `event_chain_pending`. Read in the same statement as the rollup, so a
 * sequencer round is seen either whole or not at all.
 */
export const UNFOLDED_RECORDS_SQL = `
  SELECT x.id FROM (SELECT unnest(seqs) AS seq FROM event_chain_pending WHERE project_id = $1) AS p
    JOIN calls x ON x.project_id = $1 AND x.seq = p.seq
  UNION
  SELECT e.request_id FROM (SELECT unnest(seqs) AS seq FROM event_chain_pending WHERE project_id = $1) AS p
    JOIN events e ON e.seq = p.seq
   WHERE e.project_id = $1 AND e.source = '${EXECUTION_EVENT_SOURCE}' AND e.event_type IN (${TERMINAL_EVENT_TYPES.map((t) => `'${t}'`).join(', ')})`;

const bounds = rollupBounds('call_rollup');

/** When the rollup starts for a project: its records created earlier are not folded (null: all are). */
export const rollupStart = bounds.start;

/**
 * Retention (src/retention/delete.ts) deleted the project's records before `cutoff`: from now on reads
 * take the time before it from the records that remain, so the rollup's start moves there (never
 * back) and the rows of periods ending by it can go (`deleteRollupBefore`).
 */
export const moveRollupStart = bounds.moveStart;

/** Deletes up to `limit` rollup rows of the project's periods that end by `cutoff`; returns how many. */
export const deleteRollupBefore = bounds.deleteBefore;
