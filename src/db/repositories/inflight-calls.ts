/**
 * Calls in flight (migration 0100): written with the permit before a governed call is dispatched,
 * deleted by the statement that records it. A row past its deadline belongs to a process that
 * died mid-call; reconciliation (activities/reconciliation.ts) closes it.
 */
import type { Queryable } from '../pool';

export interface InflightCall {
  executionId: string;
  projectId: string;
  permitId: string;
  startedAt: Date;
  /** After this the call can no longer be running: its process enforces the dispatch timeout. */
  deadline: Date;
  /** What closing it needs (src/pipeline/inflight.ts): plain JSON. */
  closing: Record<string, unknown>;
}

export interface InflightRow {
  execution_id: string;
  project_id: string;
  permit_id: string;
  started_at: Date;
  deadline: Date;
  closing: Record<string, unknown>;
}

/** What `tollgate_begin_calls` takes for a call's in-flight row. */
export function inflightRow(c: InflightCall): Record<string, unknown> {
  return { execution_id: c.executionId, started_at: c.startedAt.toISOString(), deadline: c.deadline.toISOString(), closing: c.closing };
}

export async function insertInflightCall(q: Queryable, c: InflightCall): Promise<void> {
  await q.query(
    'INSERT INTO inflight_calls (execution_id, project_id, permit_id, started_at, deadline, closing) VALUES ($1, $2, $3, $4, $5, $6::jsonb)',
    [c.executionId, c.projectId, c.permitId, c.startedAt, c.deadline, JSON.stringify(c.closing)],
  );
}

/** Calls whose deadline passed before `now` (oldest first). */
export async function findOverdueCalls(q: Queryable, now: Date, limit = 200): Promise<InflightRow[]> {
  const { rows } = await q.query<InflightRow>('SELECT * FROM inflight_calls WHERE deadline < $1 ORDER BY deadline LIMIT $2', [now, limit]);
  return rows;
}

export async function deleteInflightCall(q: Queryable, executionId: string): Promise<void> {
  await q.query('DELETE FROM inflight_calls WHERE execution_id = $1', [executionId]);
}
