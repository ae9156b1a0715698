/**
 * Calls in flight: a governed call of the in-process pipeline writes its in-flight marker on its
 * permit (`closing`, `dispatch_deadline`, migration 0170) and the statement that records it clears
 * both. A permit still marked past its deadline belongs to a process that died mid-call;
 * reconciliation (activities/reconciliation.ts) closes the call.
 */
import type { Queryable } from '../pool';

export interface InflightRow {
  execution_id: string;
  project_id: string;
  permit_id: string;
  deadline: Date;
  closing: Record<string, unknown>;
}

/** Calls whose deadline passed before `now` (oldest first), from the in-flight index of permits. */
export async function findOverdueCalls(q: Queryable, now: Date, limit = 200): Promise<InflightRow[]> {
  const { rows } = await q.query<InflightRow>(
    `SELECT closing->'input'->>'executionId' AS execution_id, project_id, id AS permit_id, dispatch_deadline AS deadline, closing
       FROM permits WHERE closing IS NOT NULL AND dispatch_deadline < $1 ORDER BY dispatch_deadline LIMIT $2`,
    [now, limit],
  );
  return rows;
}

/** Clears a permit's in-flight marker (its call is recorded). */
export async function clearInflightCall(q: Queryable, permitId: string): Promise<void> {
  await q.query('UPDATE permits SET closing = NULL, dispatch_deadline = NULL WHERE id = $1 AND closing IS NOT NULL', [permitId]);
}
