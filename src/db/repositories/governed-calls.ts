/**
 * The governed-call pipeline's two statements (migration 0100), in their batch form:
 * `tollgate_begin_calls` before dispatch, `tollgate_finish_calls` after. Callers batch through
 * src/pipeline/batcher.ts; the items are plain JSON (see the migration for their fields).
 */
import type { Queryable } from '../pool';
import { GOVERNANCE_LOCK_CLASS } from './policies';

export type BeginResult = 'applied' | 'exists' | 'stale';

/** Applies optimistic allows in order; per call: applied, exists (permit id taken) or stale (nothing written). */
export async function beginCalls(db: Queryable, items: Record<string, unknown>[]): Promise<BeginResult[]> {
  const { rows } = await db.query<{ r: BeginResult[] }>('SELECT tollgate_begin_calls($1, $2::jsonb) AS r', [GOVERNANCE_LOCK_CLASS, JSON.stringify(items)]);
  return rows[0].r;
}

/**
 * Records finished calls in order; per call: true when recorded now, false when its row already
 * existed. The batch commits asynchronously (synchronous_commit off for this transaction only)
 * when every item allows it (`sync: false`): see docs/decisions.md, "Recording commit".
 */
export async function finishCalls(db: Queryable, items: Record<string, unknown>[]): Promise<boolean[]> {
  const sync = items.some((i) => i.sync !== false);
  const { rows } = await db.query<{ r: boolean[] }>(
    sync
      ? 'SELECT tollgate_finish_calls($1, $2::jsonb) AS r'
      : "SELECT set_config('synchronous_commit', 'off', true), tollgate_finish_calls($1, $2::jsonb) AS r",
    [GOVERNANCE_LOCK_CLASS, JSON.stringify(items)],
  );
  return rows[0].r;
}
